//! Cells (SOSP'11): several virtual phones on one phone, one of them in the foreground.
//!
//! A scenario declares cells with `[[cell]]` (a name, a role and the apps it runs, by name of
//! their `[[app]]` spec) and their common settings with `[cells]` ([`CellsParams`]). Every cell
//! runs its own instance of its apps, with its own UIDs, foreground/background groups, IPC
//! channels and binder services, on the one kernel, page cache, file system and device of the
//! phone. Its files are a read-only shared base (paths under [`CellsParams::shared`], one copy
//! for every cell, as Cells' unioned base file system) plus a private data area (every other
//! path, moved under `/cells/<cell>`).
//!
//! Exactly one cell is foreground (`role = "fg"` at the start; the `switch_cell` op changes it).
//! Background cells keep running but cannot take the screen: a `foreground` op in a background
//! cell only records that cell's own foreground app, which becomes the phone's when the cell is
//! switched to. Every app of a background cell is a background app of the phone.
//!
//! Instances: the `fg` cell once, each `busy` template `bg_cells` times (`--bg-cells`), each
//! `idle` template enough times to make [`CellsParams::total`] cells in all. `{c}` in a cell's
//! name is its instance number within its template.
//!
//! Apps listed in no cell are the host's (Cells' root namespace: the device's system services
//! and the cell switcher); they are instantiated as in a scenario without cells.
//!
//! Names inside a cell, as the cell's apps see them:
//! - paths: shared base paths unchanged; others under `{private_root}/{cell}`;
//! - channels and binder services: `{cell}:{name}`; a name that already holds a `:` names
//!   another cell's (or the host's) channel and is left as written;
//! - app names (`foreground`, `drop_caches`): `{cell}/{app}`, unless they already hold a `/`.

use serde::{Deserialize, Serialize};

use crate::{AppSpec, Op, Role, Scenario};

/// A virtual phone (template).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CellSpec {
    /// Name; `{c}` is replaced by the instance number (needed for `busy` and `idle` templates).
    pub name: String,
    pub role: CellRole,
    /// The apps this cell runs (names of `[[app]]` specs); each cell gets its own instances.
    pub apps: Vec<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CellRole {
    /// The cell on the screen when the run starts (exactly one).
    Fg,
    /// A background cell doing work; instantiated `bg_cells` times.
    Busy,
    /// A background cell with nothing but its own system services; fills up to `total` cells.
    Idle,
}

/// What virtual phones cost and share. Every default is an assumption stated here; a scenario
/// overrides them with its sources.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CellsParams {
    /// Virtual phones in all (0: one foreground cell plus the busy ones, no idle cell).
    pub total: u32,
    /// `false` runs the foreground cell's apps on the plain phone (no cells, no virtualisation
    /// cost, no other cell): the reference for the overhead of virtualisation.
    pub virtualize: bool,
    /// Path prefixes of the read-only base every cell shares (one copy in the page cache).
    pub shared: Vec<String>,
    /// Where each cell's private data area lives: `{private_root}/{cell}/…`.
    pub private_root: String,
    /// Extra work of a path lookup through the unioned file system of a cell (the private
    /// branch is searched before the shared base), per open/creat/stat/unlink (µs at speed 1.0).
    pub union_lookup_us: f64,
    /// Extra work of a call into a device-namespace-aware driver (binder, input, framebuffer,
    /// vsync), per call (µs at speed 1.0).
    pub ns_call_us: f64,
    /// Memory each cell beyond the first keeps resident for its own Android user space (zygote,
    /// system_server, services) after the sharing Cells does (KSM, shared base): taken from
    /// the page cache (MiB).
    pub vp_memory_mib: u64,
    /// The screen (pixels) and bytes per pixel: a cell switch saves the old cell's framebuffer
    /// and restores the new one's (two copies).
    pub screen: [u32; 2],
    pub bytes_per_pixel: u32,
    /// memcpy bandwidth of the CPU for those copies (MB/s).
    pub memcpy_mb_s: f64,
}

impl Default for CellsParams {
    fn default() -> Self {
        CellsParams {
            total: 0,
            virtualize: true,
            shared: vec!["/system".into()],
            private_root: "/cells".into(),
            union_lookup_us: 5.0,
            ns_call_us: 1.0,
            vp_memory_mib: 16,
            screen: [480, 800],
            bytes_per_pixel: 4,
            memcpy_mb_s: 500.0,
        }
    }
}

impl CellsParams {
    /// Whether `path` lies in the shared read-only base.
    pub fn is_shared(&self, path: &str) -> bool {
        self.shared.iter().any(|p| {
            let p = p.trim_end_matches('/');
            path == p || path.strip_prefix(p).is_some_and(|r| r.starts_with('/'))
        })
    }

    /// `path` as seen from inside `cell`.
    pub fn cell_path(&self, cell: &str, path: &str) -> String {
        if self.is_shared(path) {
            path.to_string()
        } else {
            format!("{}/{cell}{path}", self.private_root.trim_end_matches('/'))
        }
    }

    /// Page cache (MiB) left on a phone of `phone_mib` when `cells` virtual phones run (each
    /// beyond the first keeps `vp_memory_mib` resident), never below 16 MiB.
    pub fn page_cache_mib(&self, phone_mib: u64, cells: usize) -> u64 {
        phone_mib.saturating_sub(cells.saturating_sub(1) as u64 * self.vp_memory_mib).max(16)
    }

    /// The framebuffer save + restore of a cell switch (ms at speed 1.0).
    pub fn switch_copy_ms(&self) -> f64 {
        let bytes = f64::from(self.screen[0]) * f64::from(self.screen[1]) * f64::from(self.bytes_per_pixel);
        2.0 * bytes / (self.memcpy_mb_s * 1e6) * 1e3
    }
}

/// One virtual phone of a run.
#[derive(Clone, Debug, PartialEq)]
pub struct CellInstance {
    pub name: String,
    pub role: CellRole,
    /// The `[[cell]]` it was made from.
    pub template: String,
}

/// One app of a run: its spec, instance name, background-template instance and cell.
#[derive(Clone, Debug, PartialEq)]
pub struct AppInstance<'a> {
    pub spec: &'a AppSpec,
    pub name: String,
    /// `{i}` of a background template (None for single apps and apps of cells).
    pub inst: Option<u32>,
    /// Index into the run's cells.
    pub cell: Option<usize>,
}

impl Scenario {
    /// Whether the run has virtual phones (`[[cell]]` present and `[cells] virtualize`).
    pub fn has_cells(&self) -> bool {
        !self.cells.is_empty() && self.cells_params.virtualize
    }

    /// The cells and app instances of a run with `bg_apps` background app instances (host
    /// templates) and `bg_cells` busy cells, in creation order: host apps in file order
    /// (background templates dealt round-robin), then each cell's apps in its list order,
    /// cells in the order fg, busy, idle.
    pub fn instances(&self, bg_apps: u32, bg_cells: u32) -> (Vec<CellInstance>, Vec<AppInstance<'_>>) {
        let in_cell = |a: &AppSpec| self.cells.iter().any(|c| c.apps.contains(&a.name));
        let mut apps = Vec::new();
        let templates = self.apps.iter().filter(|a| a.role == Role::Bg && !in_cell(a)).count().max(1) as u32;
        let mut template = 0;
        for spec in self.apps.iter().filter(|a| !in_cell(a)) {
            let instances: Vec<Option<u32>> = match spec.role {
                Role::Bg => {
                    template += 1;
                    (0..bg_apps).filter(|i| i % templates == template - 1).map(Some).collect()
                }
                _ => vec![None],
            };
            for inst in instances {
                let name = match inst {
                    Some(i) => format!("{}{}", spec.name, i),
                    None => spec.name.clone(),
                };
                apps.push(AppInstance { spec, name, inst, cell: None });
            }
        }
        let mut cells = Vec::new();
        if self.cells.is_empty() {
            return (cells, apps);
        }
        let spec_of = |name: &str| self.apps.iter().find(|a| a.name == name).expect("validated: cell apps exist");
        let fg = self.cells.iter().find(|c| c.role == CellRole::Fg).expect("validated: one fg cell");
        if !self.cells_params.virtualize {
            for a in &fg.apps {
                apps.push(AppInstance { spec: spec_of(a), name: a.clone(), inst: None, cell: None });
            }
            return (cells, apps);
        }
        let busy: Vec<&CellSpec> = self.cells.iter().filter(|c| c.role == CellRole::Busy).collect();
        let idle: Vec<&CellSpec> = self.cells.iter().filter(|c| c.role == CellRole::Idle).collect();
        let mut plan: Vec<(&CellSpec, u32)> = vec![(fg, 0)];
        for k in 0..if busy.is_empty() { 0 } else { bg_cells } {
            plan.push((busy[k as usize % busy.len()], k / busy.len() as u32));
        }
        let idle_n = self.cells_params.total.saturating_sub(plan.len() as u32);
        for k in 0..if idle.is_empty() { 0 } else { idle_n } {
            plan.push((idle[k as usize % idle.len()], k / idle.len() as u32));
        }
        for (spec, k) in plan {
            let cell = cells.len();
            let name = spec.name.replace("{c}", &k.to_string());
            for a in &spec.apps {
                apps.push(AppInstance { spec: spec_of(a), name: format!("{name}/{a}"), inst: None, cell: Some(cell) });
            }
            cells.push(CellInstance { name, role: spec.role, template: spec.name.clone() });
        }
        (cells, apps)
    }

    /// Checks of `[[cell]]` and `[cells]` (part of [`Scenario::validate`]).
    pub(crate) fn validate_cells(&self) -> Result<(), String> {
        if self.cells.is_empty() {
            for (i, a) in self.apps.iter().enumerate() {
                for (j, t) in a.threads.iter().enumerate() {
                    switch_targets(&t.ops, &mut |cell| {
                        Err(format!("app[{i}].thread[{j}]: switch_cell to unknown cell `{cell}`: the scenario has no [[cell]]"))
                    })?;
                }
            }
            return Ok(());
        }
        let p = &self.cells_params;
        let fg: Vec<_> = self.cells.iter().filter(|c| c.role == CellRole::Fg).collect();
        if fg.len() != 1 {
            return Err(format!("exactly one [[cell]] must have role = \"fg\", found {}", fg.len()));
        }
        let mut names = std::collections::BTreeSet::new();
        for c in &self.cells {
            if !names.insert(c.name.as_str()) {
                return Err(format!("cell `{}` is defined twice", c.name));
            }
            if c.name.is_empty() || c.name.contains(['/', ':']) || c.name.replace("{c}", "").contains(['{', '}']) {
                return Err(format!(
                    "cell `{}`: a name must be non-empty, without `/` or `:` (and `{{c}}` its only template)",
                    c.name
                ));
            }
            if c.role != CellRole::Fg && !c.name.contains("{c}") {
                return Err(format!(
                    "cell `{}`: a {:?} cell is a template and its name needs `{{c}}` (its instance number)",
                    c.name, c.role
                )
                .to_lowercase());
            }
            if c.apps.is_empty() {
                return Err(format!("cell `{}` runs no app", c.name));
            }
            for a in &c.apps {
                let Some(spec) = self.apps.iter().find(|s| &s.name == a) else {
                    return Err(format!(
                        "cell `{}`: unknown app `{a}`{}",
                        c.name,
                        crate::did_you_mean(a, self.apps.iter().map(|s| s.name.as_str()))
                    ));
                };
                if spec.role == Role::Fg && c.role != CellRole::Fg {
                    return Err(format!(
                        "cell `{}`: app `{a}` has role = \"fg\" (the headline app); a background cell runs its own apps with role \"bg\" or \"system\"",
                        c.name
                    ));
                }
                for t in &spec.threads {
                    writes_shared(&t.ops, p).map_err(|e| format!("cell `{}` app `{a}` thread `{}`: {e}", c.name, t.name))?;
                }
            }
        }
        let templates: Vec<String> = self.cells.iter().map(|c| c.name.replace("{c}", "")).collect();
        for a in &self.apps {
            for t in &a.threads {
                switch_targets(&t.ops, &mut |cell| {
                    let known = self.cells.iter().any(|c| match c.name.split_once("{c}") {
                        None => c.name == cell,
                        Some((pre, post)) => cell
                            .strip_prefix(pre)
                            .and_then(|r| r.strip_suffix(post))
                            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())),
                    });
                    if known {
                        Ok(())
                    } else {
                        Err(format!(
                            "app `{}` thread `{}`: switch_cell to unknown cell `{cell}` (cells: {})",
                            a.name,
                            t.name,
                            templates.join(", ")
                        ))
                    }
                })?;
            }
        }
        if !(p.union_lookup_us.is_finite() && p.union_lookup_us >= 0.0 && p.ns_call_us.is_finite() && p.ns_call_us >= 0.0) {
            return Err("cells.union_lookup_us and cells.ns_call_us must be non-negative numbers".into());
        }
        if !(p.memcpy_mb_s.is_finite() && p.memcpy_mb_s > 0.0) || p.screen.contains(&0) || p.bytes_per_pixel == 0 {
            return Err("cells.memcpy_mb_s, cells.screen and cells.bytes_per_pixel must be positive".into());
        }
        if !p.private_root.starts_with('/') || p.shared.iter().any(|s| !s.starts_with('/')) {
            return Err("cells.private_root and cells.shared must be absolute paths".into());
        }
        Ok(())
    }
}

/// A write to the read-only shared base from inside a cell is refused (Cells mounts the base
/// read-only in every virtual phone; copy-up is not modelled).
fn writes_shared(ops: &[Op], p: &CellsParams) -> Result<(), String> {
    for op in ops {
        match op {
            Op::Repeat { ops, .. } => writes_shared(ops, p)?,
            Op::Creat { path }
            | Op::Write { path, .. }
            | Op::Truncate { path, .. }
            | Op::Unlink { path }
            | Op::Fsync { path }
            | Op::Fdatasync { path }
            | Op::Sqlite { db: path, .. }
                if p.is_shared(path) =>
            {
                return Err(format!("`{path}` is in the read-only shared base (cells.shared): a cell cannot write it"));
            }
            _ => {}
        }
    }
    Ok(())
}

fn switch_targets(ops: &[Op], f: &mut impl FnMut(&str) -> Result<(), String>) -> Result<(), String> {
    for op in ops {
        match op {
            Op::Repeat { ops, .. } => switch_targets(ops, f)?,
            Op::SwitchCell { cell } => f(cell)?,
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(extra: &str) -> Result<Scenario, crate::LoadError> {
        let text = format!(
            "name='x'\ndescription='d'\nheadline='p'\ndevice='galaxy-s5-emmc'\nduration_s=1\n{extra}\n\
             [[app]]\nname='ui'\nrole='fg'\n[[app.thread]]\nname='main'\n\
             ops=[{{op='phase_begin', name='p'}}, {{op='read', path='/system/lib.so', len=4096}}, {{op='phase_end', name='p'}}]\n\
             [[app]]\nname='sync'\nrole='bg'\n[[app.thread]]\nname='w'\n\
             ops=[{{op='write', path='/data/db', len=4096}}]\n\
             [[app]]\nname='switcher'\nrole='system'\n[[app.thread]]\nname='m'\nops=[{{op='switch_cell', cell='busy1'}}]\n\
             [[file]]\npath='/system/lib.so'\nsize=4096\nowner='ui'\n"
        );
        Scenario::parse("c.toml", &text)
    }

    const CELLS: &str = "bg_cells = 2\n[cells]\ntotal = 5\n\
        [[cell]]\nname='home'\nrole='fg'\napps=['ui']\n\
        [[cell]]\nname='busy{c}'\nrole='busy'\napps=['sync']\n\
        [[cell]]\nname='idle{c}'\nrole='idle'\napps=['sync']\n";

    #[test]
    fn cells_are_instantiated_fg_busy_then_idle_up_to_total() {
        let sc = scenario(CELLS).unwrap();
        let (cells, apps) = sc.instances(0, 2);
        let names: Vec<_> = cells.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["home", "busy0", "busy1", "idle0", "idle1"]);
        let apps: Vec<_> = apps.iter().map(|a| (a.name.as_str(), a.cell)).collect();
        assert_eq!(apps[0], ("switcher", None), "host apps first");
        assert_eq!(apps[1], ("home/ui", Some(0)));
        assert_eq!(apps[2], ("busy0/sync", Some(1)));
        assert_eq!(apps.len(), 6);
        // More busy cells than `total` leaves no idle cell.
        let (cells, _) = sc.instances(0, 6);
        assert_eq!(cells.len(), 7);
        assert!(cells.iter().all(|c| c.role != CellRole::Idle));
    }

    #[test]
    fn plain_phone_runs_only_the_fg_cells_apps_without_cells() {
        let mut sc = scenario(CELLS).unwrap();
        sc.cells_params.virtualize = false;
        let (cells, apps) = sc.instances(0, 4);
        assert!(cells.is_empty());
        let apps: Vec<_> = apps.iter().map(|a| (a.name.as_str(), a.cell)).collect();
        assert_eq!(apps, [("switcher", None), ("ui", None)]);
    }

    #[test]
    fn private_paths_move_under_the_cell_and_the_base_is_shared() {
        let p = CellsParams::default();
        assert_eq!(p.cell_path("home", "/data/db"), "/cells/home/data/db");
        assert_eq!(p.cell_path("home", "/system/lib.so"), "/system/lib.so");
        assert_eq!(p.cell_path("home", "/systemx/f"), "/cells/home/systemx/f", "a prefix matches whole components");
        // 480x800x4 B twice at 500 MB/s.
        assert!((p.switch_copy_ms() - 6.144).abs() < 1e-9, "{}", p.switch_copy_ms());
    }

    #[test]
    fn bad_cells_are_refused_with_the_reason() {
        let err = |extra: &str| scenario(extra).unwrap_err().to_string();
        assert!(err("[[cell]]\nname='a'\nrole='busy'\napps=['sync']\n").contains("exactly one [[cell]]"));
        let e = err("[[cell]]\nname='home'\nrole='fg'\napps=['ui']\n[[cell]]\nname='b{c}'\nrole='busy'\napps=['sinc']\n");
        assert!(e.contains("unknown app `sinc`") && e.contains("did you mean `sync`"), "{e}");
        let e = err("[[cell]]\nname='home'\nrole='fg'\napps=['ui']\n[[cell]]\nname='b'\nrole='busy'\napps=['sync']\n");
        assert!(e.contains("needs `{c}`"), "{e}");
        let e = err("[[cell]]\nname='home'\nrole='fg'\napps=['ui']\n[[cell]]\nname='b{c}'\nrole='busy'\napps=['ui']\n");
        assert!(e.contains("role = \"fg\""), "{e}");
        // The switcher names `busy1`, which no template makes here.
        let e = err("[[cell]]\nname='home'\nrole='fg'\napps=['ui']\n");
        assert!(e.contains("switch_cell to unknown cell `busy1`"), "{e}");
        let e = err("[cells]\nshared=['/data']\n[[cell]]\nname='home'\nrole='fg'\napps=['ui', 'sync']\n[[cell]]\nname='busy{c}'\nrole='busy'\napps=['sync']\n");
        assert!(e.contains("read-only shared base"), "{e}");
        assert!(e.starts_with("c.toml:8: cell `home`"), "{e}");
    }
}
