//! `sextant bench gpu`: the GPU path on a machine that has no model files. Correctness:
//! every family's tiny random model on the CPU and on the GPU, same weights, same prompt.
//! Speed: random models of the default LLMs' exact shapes on the GPU (and, with
//! `--cpu-too`, on this machine's CPU beside it). See docs/GPU.md.

use anyhow::Result;
use candle_core::quantized::GgmlDType;
use candle_core::Device;
use serde::Serialize;

use sextant::llm::synthetic::{
    agreement, cuda_device, default_shapes, random_decoder, speed, tiny_shape, Agreement, Speed,
    FAMILIES,
};
use sextant::llm::LoadOptions;

#[derive(Debug, Clone, clap::Args)]
pub struct GpuArgs {
    /// Print one JSON object instead of tables.
    #[arg(long)]
    pub json: bool,
    /// Prompt length for the prompt-processing figure.
    #[arg(long, default_value_t = 512)]
    pub prompt_tokens: usize,
    /// Greedy tokens generated for the generation figure.
    #[arg(long, default_value_t = 128)]
    pub gen_tokens: usize,
    /// Greedy steps compared between CPU and GPU.
    #[arg(long, default_value_t = 32)]
    pub steps: usize,
    /// Measure the same shapes on the CPU too, for a ratio.
    #[arg(long)]
    pub cpu_too: bool,
}

#[derive(Serialize)]
struct Report {
    device: String,
    agreement: Vec<(String, Agreement)>,
    speed: Vec<ShapeSpeed>,
}

#[derive(Serialize)]
struct ShapeSpeed {
    shape: String,
    load_s: f64,
    gpu: Speed,
    cpu: Option<Speed>,
}

/// Same f32 weights on both sides: differences are the devices' arithmetic.
fn exact() -> LoadOptions {
    LoadOptions {
        decode_dtype: Some(GgmlDType::F32),
        prefill_f32: Some(false),
    }
}

/// What the product runs on a GPU: every linear layer as Q8_0 (`weights`).
fn product() -> LoadOptions {
    LoadOptions {
        decode_dtype: Some(GgmlDType::Q8_0),
        prefill_f32: Some(false),
    }
}

pub fn run_gpu(args: &GpuArgs) -> Result<()> {
    let gpu = cuda_device()?;
    let device = format!("{:?}", gpu.location());
    let prompt: Vec<u32> = (0..24).map(|i| i * 37 % 290 + 3).collect();
    let mut agreements = Vec::new();
    for (family, variant) in FAMILIES {
        let cfg = tiny_shape(variant);
        let mut cpu = random_decoder(cfg.clone(), 11, &exact(), &Device::Cpu)?;
        let mut on_gpu = random_decoder(cfg, 11, &exact(), &gpu)?;
        agreements.push((
            family.to_string(),
            agreement(&mut cpu, &mut on_gpu, &prompt, args.steps)?,
        ));
    }
    let mut speeds = Vec::new();
    for shape in default_shapes() {
        let t = std::time::Instant::now();
        let mut model = random_decoder(shape.config.clone(), 0, &product(), &gpu)?;
        let load_s = t.elapsed().as_secs_f64();
        let gpu_speed = speed(&mut model, args.prompt_tokens, args.gen_tokens)?;
        drop(model);
        let cpu = if args.cpu_too {
            let mut model = random_decoder(shape.config, 0, &product(), &Device::Cpu)?;
            Some(speed(&mut model, args.prompt_tokens, args.gen_tokens)?)
        } else {
            None
        };
        speeds.push(ShapeSpeed {
            shape: shape.name.to_string(),
            load_s,
            gpu: gpu_speed,
            cpu,
        });
    }
    let report = Report {
        device,
        agreement: agreements,
        speed: speeds,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(());
    }
    println!("device {}", report.device);
    println!("CPU vs GPU, same random f32 weights, 24-token prompt:");
    println!(
        "{:<8} {:>16} {:>22}",
        "family", "max |Δ logit|", "same greedy tokens"
    );
    for (family, a) in &report.agreement {
        println!(
            "{family:<8} {:>16.2e} {:>19}/{}",
            a.max_logit_diff, a.same_tokens, a.steps
        );
    }
    println!("random weights of the default models' shapes, Q8_0 as the product holds them:");
    println!(
        "{:<28} {:>8} {:>16} {:>16} {:>14} {:>14}",
        "shape", "load s", "GPU prompt t/s", "GPU gen t/s", "CPU prompt", "CPU gen"
    );
    for s in &report.speed {
        let (cp, cg) = match &s.cpu {
            Some(c) => (
                format!("{:.0}", c.prompt_tok_s),
                format!("{:.1}", c.gen_tok_s),
            ),
            None => ("-".into(), "-".into()),
        };
        println!(
            "{:<28} {:>8.1} {:>16.0} {:>16.1} {:>14} {:>14}",
            s.shape, s.load_s, s.gpu.prompt_tok_s, s.gpu.gen_tok_s, cp, cg
        );
    }
    Ok(())
}
