//! `numakit top`: a live terminal view of the nodes (free memory, CPU
//! busy, allocation rates, AutoNUMA activity) and of the processes (RSS,
//! memory per node, locality, nodes their threads run on, NUMA page
//! migrations), refreshed every `--interval` seconds. With `--once`, or
//! when stdout is not a terminal, prints one plain-text snapshot.
//!
//! The numbers come from `numakit::stats::top` and the cells from
//! `numakit::present::top`; this module only draws them with ratatui and
//! handles keys.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use clap::Args;
use crossterm::event::{self, Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use crossterm::terminal::{self, EnterAlternateScreen, LeaveAlternateScreen};
use numakit::present::top as view;
use numakit::stats::top::{SortKey, TopFrame, TopOptions, TopSampler};
use numakit::sys::SysRoot;
use numakit::topo::Topology;
use ratatui::backend::CrosstermBackend;
use ratatui::layout::{Alignment, Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Cell, Clear, Paragraph, Row, Table};
use ratatui::{Frame, Terminal};

use super::common::read_error;
use crate::Failure;

/// `numakit top`.
#[derive(Debug, Args)]
pub struct TopArgs {
    /// Seconds between refreshes (or 500ms, 2s, 1m).
    #[arg(long, value_name = "SECS", default_value_t = 2.0, value_parser = crate::cli::seconds)]
    pub interval: f64,
    /// Print one plain-text snapshot (two samples an interval apart) and exit.
    #[arg(long)]
    pub once: bool,
    /// Sort processes by: rss, cpu, threads, pid, name.
    #[arg(long, value_name = "KEY", default_value = "rss", value_parser = ["rss", "cpu", "threads", "pid", "name"])]
    pub sort: String,
    /// Only processes whose command name contains TEXT.
    #[arg(long, value_name = "TEXT")]
    pub name: Option<String>,
    /// Only processes of this user (name or uid).
    #[arg(long, value_name = "USER")]
    pub user: Option<String>,
    /// Process rows of the snapshot (the live view fills the screen).
    #[arg(long, short = 'n', value_name = "N", default_value_t = 20)]
    pub rows: usize,
}

/// Runs `numakit top`.
pub fn run(sys: &SysRoot, args: &TopArgs) -> anyhow::Result<u8> {
    if !(args.interval.is_finite() && args.interval >= 0.1 && args.interval <= 3600.0) {
        return Err(Failure::usage(format!("invalid --interval {}: give 0.1 to 3600 seconds", args.interval)).into());
    }
    let topo = Topology::read_nodes_only(sys).map_err(read_error)?;
    let mut sampler = TopSampler::new(sys).map_err(read_error)?;
    let opts = TopOptions {
        sort: SortKey::parse(&args.sort).unwrap_or(SortKey::Rss),
        name: args.name.clone(),
        user: args.user.clone(),
        rows: args.rows,
    };
    let interval = Duration::from_secs_f64(args.interval);
    if args.once || !std::io::stdout().is_terminal() {
        // A first sample without process rows (no numa_maps read) gives
        // the rates their start.
        sampler.sample(sys, &topo, &TopOptions { rows: 0, ..opts.clone() }, Instant::now()).map_err(read_error)?;
        std::thread::sleep(interval);
        let frame = sampler.sample(sys, &topo, &opts, Instant::now()).map_err(read_error)?;
        let ids: Vec<u32> = topo.nodes.iter().map(|n| n.id).collect();
        let mut out = crate::output::stdout();
        out.write_all(view::snapshot_text(&frame, &ids).as_bytes())?;
        out.flush()?;
        return Ok(0);
    }
    live(sys, &topo, sampler, opts, interval)
}

/// Restores the terminal when dropped (also on errors and panics).
struct TermGuard;

impl TermGuard {
    fn enter() -> std::io::Result<Self> {
        terminal::enable_raw_mode()?;
        if let Err(e) = crossterm::execute!(std::io::stdout(), EnterAlternateScreen) {
            let _ = terminal::disable_raw_mode();
            return Err(e);
        }
        Ok(TermGuard)
    }
}

impl Drop for TermGuard {
    fn drop(&mut self) {
        let _ = crossterm::execute!(std::io::stdout(), LeaveAlternateScreen, crossterm::cursor::Show);
        let _ = terminal::disable_raw_mode();
    }
}

/// What the prompt line is asking for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Prompt {
    Name,
    User,
}

/// State of the live view.
struct State {
    opts: TopOptions,
    interval: Duration,
    paused: bool,
    help: bool,
    prompt: Option<(Prompt, String)>,
    frame: Option<TopFrame>,
    node_ids: Vec<u32>,
    message: Option<String>,
}

fn live(
    sys: &SysRoot,
    topo: &Topology,
    mut sampler: TopSampler,
    opts: TopOptions,
    interval: Duration,
) -> anyhow::Result<u8> {
    let guard = TermGuard::enter()?;
    let mut term = Terminal::new(CrosstermBackend::new(std::io::stdout()))?;
    term.clear()?;
    let mut st = State {
        opts,
        interval,
        paused: false,
        help: false,
        prompt: None,
        frame: None,
        node_ids: topo.nodes.iter().map(|n| n.id).collect(),
        message: None,
    };
    let mut next = Instant::now();
    loop {
        if !st.paused && Instant::now() >= next {
            let size = term.size()?;
            st.opts.rows = process_rows(size.height, topo.nodes.len());
            st.frame = Some(sampler.sample(sys, topo, &st.opts, Instant::now()).map_err(read_error)?);
            next = Instant::now() + st.interval;
        }
        term.draw(|f| draw(f, &st))?;
        let wait = if st.paused { Duration::from_millis(250) } else { next.saturating_duration_since(Instant::now()) };
        if event::poll(wait)? {
            match event::read()? {
                Event::Key(k) if k.kind != KeyEventKind::Release => match handle_key(&mut st, k) {
                    Action::Quit => break,
                    Action::Refresh => next = Instant::now(),
                    Action::None => {}
                },
                Event::Resize(..) => next = Instant::now(),
                _ => {}
            }
        }
    }
    drop(term);
    drop(guard);
    Ok(0)
}

/// Process rows that fit: the screen less the title, node panel (header,
/// nodes, AutoNUMA line, borders), table header and borders, status line.
fn process_rows(height: u16, nodes: usize) -> usize {
    let node_panel = node_panel_height(height, nodes) as usize;
    (height as usize).saturating_sub(1 + node_panel + 2 + 1).max(1)
}

fn node_panel_height(height: u16, nodes: usize) -> u16 {
    // header + nodes + AutoNUMA line + 2 borders, at most half the screen.
    ((nodes + 4) as u16).min(height / 2).max(5)
}

enum Action {
    Quit,
    Refresh,
    None,
}

fn handle_key(st: &mut State, k: KeyEvent) -> Action {
    if k.modifiers.contains(KeyModifiers::CONTROL) && k.code == KeyCode::Char('c') {
        return Action::Quit;
    }
    if let Some((kind, text)) = &mut st.prompt {
        match k.code {
            KeyCode::Enter => {
                let v = (!text.is_empty()).then(|| text.clone());
                match kind {
                    Prompt::Name => st.opts.name = v,
                    Prompt::User => st.opts.user = v,
                }
                st.prompt = None;
                return Action::Refresh;
            }
            KeyCode::Esc => st.prompt = None,
            KeyCode::Backspace => {
                text.pop();
            }
            KeyCode::Char(c) => text.push(c),
            _ => {}
        }
        return Action::None;
    }
    if st.help {
        st.help = false;
        return if matches!(k.code, KeyCode::Char('q')) { Action::Quit } else { Action::None };
    }
    match k.code {
        KeyCode::Char('q') | KeyCode::Esc => Action::Quit,
        KeyCode::Char('h') | KeyCode::Char('?') | KeyCode::F(1) => {
            st.help = true;
            Action::None
        }
        KeyCode::Char('s') | KeyCode::Tab => {
            st.opts.sort = st.opts.sort.next();
            Action::Refresh
        }
        KeyCode::Char(c @ ('M' | 'C' | 'T' | 'P' | 'N')) => {
            st.opts.sort = match c {
                'M' => SortKey::Rss,
                'C' => SortKey::Cpu,
                'T' => SortKey::Threads,
                'P' => SortKey::Pid,
                _ => SortKey::Name,
            };
            Action::Refresh
        }
        KeyCode::Char('p') | KeyCode::Char(' ') => {
            st.paused = !st.paused;
            if st.paused {
                Action::None
            } else {
                Action::Refresh
            }
        }
        KeyCode::Char('/') | KeyCode::Char('f') => {
            st.prompt = Some((Prompt::Name, st.opts.name.clone().unwrap_or_default()));
            Action::None
        }
        KeyCode::Char('u') => {
            st.prompt = Some((Prompt::User, st.opts.user.clone().unwrap_or_default()));
            Action::None
        }
        KeyCode::Char('c') => {
            st.opts.name = None;
            st.opts.user = None;
            Action::Refresh
        }
        KeyCode::Char('+') => {
            st.interval = (st.interval * 2).min(Duration::from_secs(3600));
            st.message = Some(format!("interval {:.1} s", st.interval.as_secs_f64()));
            Action::None
        }
        KeyCode::Char('-') => {
            st.interval = (st.interval / 2).max(Duration::from_millis(100));
            st.message = Some(format!("interval {:.1} s", st.interval.as_secs_f64()));
            Action::Refresh
        }
        _ => Action::None,
    }
}

const HELP: &[&str] = &[
    "numakit top: keys",
    "",
    "  s, Tab     next sort key (rss, cpu, threads, pid, name)",
    "  M C T P N  sort by RSS, CPU, threads, PID, name",
    "  / or f     filter by command name (Enter applies, Esc cancels)",
    "  u          filter by user (name or uid)",
    "  c          clear the filters",
    "  p, space   pause / resume",
    "  + / -      slower / faster refresh",
    "  h, ?       this help (any key closes it)",
    "  q, Esc     quit",
    "",
    "MEM/NODE: one block per node, its height the node's share of the",
    "process's memory, then the biggest node and its share. LOCAL: share",
    "of the memory on the nodes its threads run on (RUNS ON). MIGR: NUMA",
    "pages migrated (main thread, /proc/PID/sched).",
];

fn draw(f: &mut Frame, st: &State) {
    let area = f.area();
    let node_h = node_panel_height(area.height, st.node_ids.len());
    let [title, nodes, procs, status] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(node_h),
        Constraint::Min(3),
        Constraint::Length(1),
    ])
    .areas(area);
    let filters = match (&st.opts.name, &st.opts.user) {
        (None, None) => String::new(),
        (n, u) => format!(
            "  filter:{}{}",
            n.as_ref().map(|n| format!(" name~{n}")).unwrap_or_default(),
            u.as_ref().map(|u| format!(" user={u}")).unwrap_or_default()
        ),
    };
    let paused = if st.paused { "  PAUSED" } else { "" };
    f.render_widget(
        Paragraph::new(format!(
            "numakit top  every {:.1} s  sort: {}{filters}{paused}",
            st.interval.as_secs_f64(),
            st.opts.sort.name()
        ))
        .style(Style::default().add_modifier(Modifier::BOLD)),
        title,
    );
    if let Some(frame) = &st.frame {
        draw_nodes(f, nodes, frame);
        draw_processes(f, procs, frame, &st.node_ids);
    }
    let status_text = match (&st.prompt, &st.message) {
        (Some((Prompt::Name, t)), _) => format!("filter by name: {t}_"),
        (Some((Prompt::User, t)), _) => format!("filter by user: {t}_"),
        (None, Some(m)) => format!("{m}   h: help  q: quit"),
        (None, None) => {
            let shown = st.frame.as_ref().map_or(0, |fr| fr.processes.len());
            let matched = st.frame.as_ref().map_or(0, |fr| fr.matched);
            let total = st.frame.as_ref().map_or(0, |fr| fr.total);
            format!(
                "{shown} of {matched} matching ({total} processes)   h: help  s: sort  /: filter  p: pause  q: quit"
            )
        }
    };
    f.render_widget(Paragraph::new(status_text), status);
    if st.help {
        let w = 72.min(area.width);
        let h = (HELP.len() as u16 + 2).min(area.height);
        let popup =
            Rect { x: area.width.saturating_sub(w) / 2, y: area.height.saturating_sub(h) / 2, width: w, height: h };
        f.render_widget(Clear, popup);
        let lines: Vec<Line> = HELP.iter().map(|l| Line::from(*l)).collect();
        f.render_widget(Paragraph::new(lines).block(Block::default().borders(Borders::ALL).title(" Help ")), popup);
    }
}

/// A table row: the columns in `left` left-aligned, the others right.
fn row_of(cells: Vec<String>, left: &[usize]) -> Row<'static> {
    Row::new(cells.into_iter().enumerate().map(|(i, c)| {
        let line = Line::from(c);
        Cell::from(if left.contains(&i) { line } else { line.alignment(Alignment::Right) })
    }))
}

fn widths_of(rows: &[Vec<String>], header: &[&str]) -> Vec<Constraint> {
    (0..header.len())
        .map(|i| {
            let w = rows.iter().filter_map(|r| r.get(i)).map(|c| c.chars().count()).max().unwrap_or(0);
            Constraint::Length(w.max(header[i].len()) as u16)
        })
        .collect()
}

fn draw_nodes(f: &mut Frame, area: Rect, frame: &TopFrame) {
    let cells: Vec<Vec<String>> = frame.nodes.iter().map(view::node_cells).collect();
    let widths = widths_of(&cells, &view::NODE_HEADER);
    let [table_area, line_area] = Layout::vertical([Constraint::Min(2), Constraint::Length(2)]).areas(area);
    let rows: Vec<Row> = cells.into_iter().map(|c| row_of(c, &[])).collect();
    let header: Vec<String> = view::NODE_HEADER.iter().map(|s| s.to_string()).collect();
    let table = Table::new(rows, widths)
        .header(row_of(header, &[]).style(Style::default().add_modifier(Modifier::BOLD)))
        .column_spacing(2)
        .block(Block::default().borders(Borders::TOP).title(" Nodes "));
    f.render_widget(table, table_area);
    f.render_widget(
        Paragraph::new(view::system_line(&frame.system)).block(Block::default().borders(Borders::BOTTOM)),
        line_area,
    );
}

fn draw_processes(f: &mut Frame, area: Rect, frame: &TopFrame, node_ids: &[u32]) {
    let cells: Vec<Vec<String>> = frame.processes.iter().map(|p| view::process_cells(p, node_ids)).collect();
    let widths = widths_of(&cells, &view::PROCESS_HEADER);
    let rows: Vec<Row> = cells.into_iter().map(|c| row_of(c, &view::PROCESS_LEFT)).collect();
    let header: Vec<String> = view::PROCESS_HEADER.iter().map(|s| s.to_string()).collect();
    let table = Table::new(rows, widths)
        .header(row_of(header, &view::PROCESS_LEFT).style(Style::default().add_modifier(Modifier::BOLD)))
        .column_spacing(2)
        .block(Block::default().borders(Borders::TOP).title(" Processes "));
    f.render_widget(table, area);
}
