//! `sextant bench routing`: the labelled routing set through the routing navigator on the
//! real model, scored: rule-decided and model-decided accuracy, detours without their
//! signature, escalations, latency per model decision.

use std::path::Path;
use std::time::Instant;

use anyhow::{bail, Result};

use sextant::eval::{load_routing_set, score_routing, summarise_routing, Share};
use sextant::llm::Llm;
use sextant::protocols::routing::{prepare, route};
use sextant::protocols::Step;

pub fn run_routing(
    llm: &mut Llm,
    set: &Path,
    split: &str,
    json: Option<&Path>,
    verbose: bool,
) -> Result<()> {
    let cases: Vec<_> = load_routing_set(set)?
        .into_iter()
        .filter(|c| split == "all" || c.case.split.as_deref() == Some(split))
        .collect();
    if cases.is_empty() {
        bail!("{} has no cases in split {split:?}", set.display());
    }
    let mut scored = Vec::new();
    for c in &cases {
        let by_model = matches!(prepare(&c.flow, &c.summary), Step::NeedsLlm(_));
        let t = Instant::now();
        let (d, _) = route(&c.flow, &c.summary, Some(&mut *llm))?;
        let s = score_routing(c, &d, by_model, t.elapsed().as_secs_f64() * 1e3);
        if verbose {
            eprintln!(
                "{} {} [{}] {} {} (expect {:?}): {}",
                s.id,
                if s.right { "ok  " } else { "MISS" },
                s.decided_by,
                s.decision.as_str(),
                s.detour_target.as_deref().unwrap_or(""),
                s.expect,
                s.reason
            );
        }
        scored.push(s);
    }
    let f = summarise_routing(&scored);
    let line = |name: &str, s: &Share| println!("  {name:<24} {s}");
    println!(
        "{} · split {split} · {} routing cases",
        set.display(),
        f.cases
    );
    line("decided by rules", &f.by_rules);
    line("left to the model", &f.by_model);
    println!(
        "  detours without their signature {} · escalations {} (by the model stage {}) · model decision p50 {:.2} s, p95 {:.2} s",
        f.detours_without_signature,
        f.escalations,
        f.model_escalations,
        f.model_latency_p50_ms / 1e3,
        f.model_latency_p95_ms / 1e3
    );
    crate::cli::write_json(json, &serde_json::json!({"figures": f, "cases": scored}))?;
    Ok(())
}
