//! Control requests ([`Request`]) from `numakit ctl`, `advise` and
//! `run --auto`: exclusions and inclusions (saved at once), reload of the
//! configuration, the last decisions, the status, and advice from the
//! last scan's view of the nodes.

use super::{build_machine, open_log, rfc3339, Service};
use crate::daemon::collect::NodeCpus;
use crate::daemon::protocol::{Advice, Done, LoadView, NodeView, Request, Response, Target};
use crate::daemon::settings::{LoadError, Settings};
use crate::place::auto::{self, AutoRequest, NodeLoad};

impl Service {
    /// Answers one control request.
    pub fn handle(&mut self, req: &Request) -> Response {
        let r = match req {
            Request::Status => return Response::ok(&self.status()),
            Request::Decisions { last } => {
                let n = (*last).min(self.recent.len());
                return Response::ok(&self.recent.iter().skip(self.recent.len() - n).collect::<Vec<_>>());
            }
            Request::Reload => return self.reload(),
            Request::Advise { cpus, mem_bytes, reserve } => return self.advise(*cpus, *mem_bytes, reserve),
            Request::Exclude { target: t } => {
                self.state.ctl.put(t, true);
                format!("excluded {t}")
            }
            Request::Include { target: t } => {
                self.state.ctl.put(t, false);
                format!("included {t}")
            }
            Request::Forget { target: t } => {
                let c = &mut self.state.ctl;
                let h = &mut self.state.history;
                match t {
                    Target::Pid(p) => {
                        c.exclude_pids.retain(|x| x != p);
                        c.include_pids.retain(|x| x != p);
                        if let Some(r) = h.committed.procs.get_mut(p) {
                            r.left_alone_until_s = None;
                        }
                    }
                    Target::Comm(n) => {
                        c.exclude_comms.retain(|x| x != n);
                        c.include_comms.retain(|x| x != n);
                        h.observed.comms.remove(n);
                        h.committed.comms.remove(n);
                    }
                    Target::Cgroup(g) => {
                        c.exclude_cgroups.retain(|x| x != g);
                        c.include_cgroups.retain(|x| x != g);
                    }
                }
                format!("forgot {t}")
            }
        };
        match self.save() {
            Ok(()) => {
                self.write_status();
                Response::ok(&Done { done: r })
            }
            Err(e) => Response::err(e.to_string()),
        }
    }

    /// Drops from the `ctl` lists the pids that no longer run and the
    /// cgroups that are gone (a batch job that ended), saving the state
    /// when something was dropped. A pid is checked by `/proc/PID`, a
    /// cgroup by its folder.
    pub(super) fn forget_ended_targets(&mut self) -> Result<(), super::ServiceError> {
        let sys = &self.sys;
        let c = &mut self.state.ctl;
        let before = c.clone();
        let runs = |p: &i32| sys.exists(format!("proc/{p}"));
        let there = |g: &String| sys.exists(crate::procs::cgroup::dir(g));
        c.exclude_pids.retain(runs);
        c.include_pids.retain(runs);
        c.exclude_cgroups.retain(there);
        c.include_cgroups.retain(there);
        if *c != before {
            self.save()?;
        }
        Ok(())
    }

    fn reload(&mut self) -> Response {
        let Some(path) = self.config_path.clone() else {
            return Response::err("the daemon was started without --config: nothing to reload");
        };
        let new = match Settings::load(&path) {
            Ok(s) => s,
            Err(LoadError::Read(e)) => return Response::err(format!("{}: {e}", crate::text::path(&path))),
            Err(LoadError::Invalid(e)) => return Response::err(format!("{e} (the old configuration stays)")),
        };
        if new.state_dir != self.settings.state_dir || new.socket != self.settings.socket {
            return Response::err("state_dir and socket cannot change on reload: restart the daemon");
        }
        let reserved = match new.reserved() {
            Ok(r) => r,
            Err(e) => return Response::err(e.to_string()),
        };
        let node_cpus = NodeCpus::new(&self.topo, &reserved);
        let machine = match build_machine(&self.topo, &node_cpus, &new) {
            Ok(m) => m,
            Err(e) => return Response::err(e.to_string()),
        };
        if new.log != self.settings.log {
            match open_log(&new.log) {
                Ok(f) => self.log = Some(f),
                Err(e) => return Response::err(e.to_string()),
            }
        }
        let mode_changed = new.autonuma != self.settings.autonuma;
        self.settings = new;
        self.node_cpus = node_cpus;
        self.machine = machine;
        self.interval_s = self.settings.interval_min_s;
        if mode_changed {
            if let Err(e) = self.globals_at_start() {
                return Response::err(e.to_string());
            }
        }
        self.write_status();
        Response::ok(&Done { done: format!("reloaded {}", path.display()) })
    }

    /// Advice from the last scan's view of the nodes.
    fn advise(&self, cpus: u32, mem_bytes: u64, reserve: &str) -> Response {
        let Some(snap) = &self.last else { return Response::err("no scan yet: ask again after the first interval") };
        let configured = self.settings.reserved().unwrap_or_default();
        let reserve = match auto::parse_reserve(reserve, &self.topo.online_cpus) {
            Ok(r) => r.union(&configured),
            Err(e) => return Response::err(format!("reserve {e}")),
        };
        let idle = self.collector.last_idle();
        let loads: Vec<NodeLoad> = self
            .topo
            .nodes
            .iter()
            .map(|n| NodeLoad {
                node: n.id,
                idle_cpus: n.cpus.intersection(idle),
                free_bytes: snap.nodes.iter().find(|s| s.id == n.id).map_or(0, |s| s.free_bytes),
                placed: 0,
            })
            .collect();
        let mut view = NodeView {
            loads: loads.iter().map(LoadView::of).collect(),
            reserved: configured.to_list(),
            scanned: rfc3339(snap.time_s),
            advice: None,
            refused: None,
        };
        if cpus == 0 {
            return Response::ok(&view);
        }
        let req = AutoRequest { cpus, mem_bytes, reserve, near: None };
        match auto::decide(&self.topo, &loads, &req) {
            Ok(d) => {
                view.advice = Some(Advice::of(&d, "daemon"));
                Response::ok(&view)
            }
            Err(r) => {
                view.refused = Some(r.to_string());
                Response { ok: false, error: Some(r.to_string()), ..Response::ok(&view) }
            }
        }
    }
}
