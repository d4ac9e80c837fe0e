//! Integration tests on the real embedded SmolLM2 GGUF, from the model store that
//! `make models` fills. A missing model fails these tests with the store's own error
//! (naming the model and the command that fetches it); nothing is skipped.
//! One model is loaded once and shared by every test in this file.

use std::sync::{Mutex, MutexGuard, OnceLock};

use serde_json::Value;
use sextant::llm::chat_template::Message;
use sextant::llm::{tokenizer, Llm, LoadOptions};
use sextant::models::gguf::GgufFile;
use sextant::models::{ModelError, ModelStore, Role, VerifiedModel};
use sextant::schemas::BUILTIN;
use sextant::structured::{generate_structured, OutputSpec, StructuredError, StructuredRequest};

/// The engine tests run on the small model (fast); answers are tested on the default.
const ENGINE_LLM: &str = "smollm2-135m-instruct";

fn model() -> VerifiedModel {
    ModelStore::open(None)
        .resolve(Role::Llm, Some(ENGINE_LLM))
        .unwrap_or_else(|e| panic!("{e}"))
}

fn llm() -> MutexGuard<'static, Llm> {
    static LLM: OnceLock<Mutex<Llm>> = OnceLock::new();
    LLM.get_or_init(|| Mutex::new(Llm::load(&model(), &LoadOptions::default()).unwrap()))
        .lock()
        .unwrap_or_else(|p| p.into_inner())
}

#[test]
fn tokenizer_matches_the_files_own_ids() {
    let llm = llm();
    let enc = |s: &str| tokenizer::encode(&llm.tokenizer, s).unwrap();
    // The file says add_space_prefix = false: "Hello" is 19556, not 38699 (ĠHello).
    assert_eq!(enc("Hello"), vec![19556]);
    assert_eq!(enc("The"), vec![504]);
    assert_eq!(enc(" The"), vec![378]);
    assert_eq!(enc("fn"), vec![7853]);
    // Digits are split one by one (the smollm pre-tokenizer).
    assert_eq!(enc("2024").len(), 4);
}

#[test]
fn tokenizer_round_trips_text_and_chat_markers() {
    let llm = llm();
    for text in [
        "Déjà vu: naïve café, Straße, 東京, Привет, 🚀 and tabs\tand\nnewlines.",
        "{\"answer\": \"kubectl rollout undo deployment/<name>\"}",
        "<|im_start|>user\nhi<|im_end|>\n",
    ] {
        let ids = tokenizer::encode(&llm.tokenizer, text).unwrap();
        assert_eq!(tokenizer::decode(&llm.tokenizer, &ids).unwrap(), text);
    }
    let ids = tokenizer::encode(&llm.tokenizer, "<|im_start|>user\nhi<|im_end|>").unwrap();
    assert_eq!(ids.first(), Some(&1), "<|im_start|> is one special token");
    assert_eq!(ids.last(), Some(&2), "<|im_end|> is one special token");
    assert!(
        llm.eos.contains(&2) && llm.eos.contains(&0),
        "{:?}",
        llm.eos
    );
}

#[test]
fn chat_template_from_the_gguf_renders_chatml() {
    let llm = llm();
    let with_default = llm
        .template
        .render(&[Message::new("user", "Where is TLS configured?")], true)
        .unwrap();
    // The file's template adds its own default system line when none is given.
    assert!(
        with_default.starts_with("<|im_start|>system\n"),
        "{with_default}"
    );
    assert!(with_default.contains("<|im_start|>user\nWhere is TLS configured?<|im_end|>\n"));
    assert!(with_default.ends_with("<|im_start|>assistant\n"));
    let with_system = llm
        .template
        .render(
            &[
                Message::new("system", "Be brief."),
                Message::new("user", "Q"),
            ],
            true,
        )
        .unwrap();
    assert!(with_system.starts_with("<|im_start|>system\nBe brief.<|im_end|>"));
    assert!(!with_system.contains("SmolLM"));
}

#[test]
fn each_seed_schema_yields_a_valid_object_for_a_realistic_prompt() {
    let mut llm = llm();
    for s in &BUILTIN {
        let schema = s.schema();
        let req = StructuredRequest::new(
            vec![
                Message::new("system", s.system),
                Message::new("user", s.example_prompt),
            ],
            OutputSpec::JsonSchema(schema.clone()),
        );
        let out = generate_structured(&mut llm, &req, &mut |_| {})
            .unwrap_or_else(|e| panic!("{}: {e}", s.name));
        let value: Value = serde_json::from_str(&out.text).unwrap();
        let validator = jsonschema::validator_for(&schema).unwrap();
        assert!(validator.is_valid(&value), "{}: {value}", s.name);
        assert!(
            out.generation.forced_tokens > 0,
            "the grammar forces the keys"
        );
    }
}

#[test]
fn a_small_budget_returns_incomplete() {
    let mut llm = llm();
    let s = sextant::schemas::find("navigator-response").unwrap();
    // Below the smallest valid navigator object: refused before decoding, with the figure.
    let mut req = StructuredRequest::new(
        vec![Message::new("user", s.example_prompt)],
        OutputSpec::JsonSchema(s.schema()),
    );
    req.max_tokens = 12;
    let err = generate_structured(&mut llm, &req, &mut |_| {}).unwrap_err();
    assert!(
        matches!(err, StructuredError::BudgetTooSmall { given: 12, .. }),
        "{err}"
    );
    // Above it, but below what the model writes: incomplete, never partial JSON.
    let schema = serde_json::json!({
        "type": "object", "required": ["contact"],
        "properties": {"contact": {"type": "string", "format": "email"}}
    });
    let mut req = StructuredRequest::new(
        vec![Message::new("user", "Who do I email about a rollback?")],
        OutputSpec::JsonSchema(schema),
    );
    req.max_tokens = 5;
    let err = generate_structured(&mut llm, &req, &mut |_| {}).unwrap_err();
    assert!(
        matches!(err, StructuredError::Incomplete { max_tokens: 5, .. }),
        "{err}"
    );
}

#[test]
fn a_lark_grammar_constrains_free_text() {
    let mut llm = llm();
    let req = StructuredRequest::new(
        vec![Message::new(
            "user",
            "Is TLS enabled by default? Answer yes or no.",
        )],
        OutputSpec::Lark("start: (\"yes\" | \"no\") \".\"".into()),
    );
    let out = generate_structured(&mut llm, &req, &mut |_| {}).unwrap();
    assert!(out.text == "yes." || out.text == "no.", "{:?}", out.text);
}

#[test]
fn a_truncated_gguf_is_refused_with_a_clear_error() {
    let src = std::fs::read(model().main_file()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cut = dir.path().join("cut.gguf");
    std::fs::write(&cut, &src[..src.len() / 2]).unwrap();
    let err = GgufFile::open(&cut)
        .err()
        .expect("truncated file must not open")
        .to_string();
    assert!(
        err.contains("truncated") && err.contains("cut.gguf"),
        "{err}"
    );
    // Importing it is refused too, and leaves nothing in the store.
    let store = ModelStore::open(Some(dir.path().join("store")));
    let err = store.import(&cut, None).unwrap_err().to_string();
    assert!(err.contains("truncated"), "{err}");
    assert!(store.resolve(Role::Llm, Some("cut")).is_err());
    // Not even the header: a clear "not a GGUF file".
    std::fs::write(&cut, b"GGUF\x03\x00").unwrap();
    assert!(GgufFile::open(&cut).is_err());
    std::fs::write(&cut, b"PK\x03\x04 a zip").unwrap();
    let err = GgufFile::open(&cut).err().unwrap().to_string();
    assert!(err.contains("not a GGUF file"), "{err}");
}

#[test]
fn a_file_with_the_wrong_sha256_is_never_loaded() {
    let dir = tempfile::tempdir().unwrap();
    let store = ModelStore::open(Some(dir.path().to_path_buf()));
    let spec = sextant::models::manifest()
        .into_iter()
        .find(|s| s.role == Role::Llm)
        .unwrap();
    let path = store.model_dir(&spec.name).join(&spec.files[0].file);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    // A real, loadable GGUF — but not the one the manifest names (one byte changed).
    let mut bytes = std::fs::read(model().main_file()).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    std::fs::write(&path, &bytes).unwrap();
    let err = store.resolve(Role::Llm, None).unwrap_err();
    assert!(matches!(err, ModelError::ShaMismatch { .. }), "{err}");
    assert!(err.to_string().contains("refusing to load"), "{err}");
}

#[test]
fn importing_a_users_gguf_makes_it_loadable_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let store = ModelStore::open(Some(dir.path().join("store")));
    let spec = store.import(&model().main_file(), Some("my-smol")).unwrap();
    assert_eq!(spec.role, Role::Llm);
    let v = store.resolve(Role::Llm, Some("my-smol")).unwrap();
    assert_eq!(
        sextant::models::sha256_file(&v.main_file()).unwrap(),
        spec.files[0].sha256
    );
    assert!(store
        .status()
        .iter()
        .any(|s| s.name == "my-smol" && s.state == "verified"));
}

/// A GGUF whose one tensor has GGML type `code` (16: IQ2_XXS, which candle cannot read).
fn gguf_with_tensor_type(code: u32) -> Vec<u8> {
    let string = |s: &str| [&(s.len() as u64).to_le_bytes()[..], s.as_bytes()].concat();
    let mut out = b"GGUF".to_vec();
    out.extend(3u32.to_le_bytes());
    out.extend(1u64.to_le_bytes()); // tensors
    out.extend(1u64.to_le_bytes()); // metadata entries
    out.extend(string("general.architecture"));
    out.extend(8u32.to_le_bytes()); // a string value
    out.extend(string("llama"));
    out.extend(string("blk.0.attn_q.weight"));
    out.extend(1u32.to_le_bytes());
    out.extend(256u64.to_le_bytes());
    out.extend(code.to_le_bytes());
    out.extend(0u64.to_le_bytes());
    out.resize(out.len().div_ceil(32) * 32 + 66, 0);
    out
}

/// The desktop's model list through the service: each model with its family,
/// quantization and purpose, the one in use; a file the engine cannot run is refused
/// naming why; an imported GGUF is listed and can be switched to; the embedder cannot
/// be picked as the answer model.
#[test]
fn the_service_lists_imports_and_switches_models() {
    use sextant::service::{OpenOptions, Request, Service};
    let tmp = tempfile::tempdir().unwrap();
    // A store of its own (imports land here, not in the user's), holding the default
    // models through links.
    let user = ModelStore::open(None);
    let store_dir = tmp.path().join("store");
    std::fs::create_dir(&store_dir).unwrap();
    for spec in sextant::models::manifest() {
        let real = user.model_dir(&spec.name);
        if real.exists() {
            std::os::unix::fs::symlink(&real, store_dir.join(&spec.name)).unwrap();
        }
    }
    let store = ModelStore::open(Some(store_dir.clone()));
    let svc = Service::open(
        &store,
        &OpenOptions {
            kb: Some(tmp.path().join("kb").display().to_string()),
            llm: Some(ENGINE_LLM.into()),
            lazy_llm: true,
            ..OpenOptions::default()
        },
    )
    .unwrap();
    let call = |v: Value| svc.handle(Request::from_json(v).unwrap());
    let listed = call(serde_json::json!({"op": "models"})).unwrap();
    let find = |v: &Value, name: &str| {
        v["models"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("{name} not listed: {v}"))
    };
    let smol = find(&listed, ENGINE_LLM);
    assert_eq!(
        (&smol["family"], &smol["quantization"], &smol["in_use"]),
        (
            &Value::from("llama"),
            &Value::from("Q4_1"),
            &Value::from(true)
        )
    );
    assert!(smol["purpose"].as_str().unwrap().starts_with("fast"));
    let reader = find(&listed, "qwen2.5-coder-0.5b-instruct");
    assert_eq!(
        (
            &reader["family"],
            &reader["quantization"],
            &reader["in_use"]
        ),
        (
            &Value::from("qwen2"),
            &Value::from("Q4_K_M"),
            &Value::from(false)
        )
    );
    assert!(reader["bytes"].as_u64().unwrap() > 400_000_000);
    let embedder = find(&listed, "all-minilm-l6-v2");
    assert_eq!(
        (&embedder["family"], &embedder["in_use"]),
        (&Value::from("bert"), &Value::from(true))
    );

    // Refusals name the file and the reason.
    let iq2 = tmp.path().join("iq2.gguf");
    std::fs::write(&iq2, gguf_with_tensor_type(16)).unwrap();
    let err = call(serde_json::json!({"op": "import_model", "path": iq2}))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("IQ2_XXS") && err.contains("cannot run") && err.contains("Q4_K"),
        "{err}"
    );
    let err = call(serde_json::json!({"op": "import_model", "path": "smol.gguf"}))
        .unwrap_err()
        .to_string();
    assert!(err.contains("absolute path"), "{err}");
    let err = call(serde_json::json!({"op": "use_model", "name": "all-minilm-l6-v2"}))
        .unwrap_err()
        .to_string();
    assert!(err.contains("has the role embedding"), "{err}");

    // A user's own GGUF: imported, listed, switched to.
    let imported = call(serde_json::json!({
        "op": "import_model", "path": model().main_file(), "name": "my-smol"
    }))
    .unwrap();
    assert_eq!(imported["imported"], "my-smol");
    let mine = find(&imported, "my-smol");
    assert!(mine["purpose"].as_str().unwrap().starts_with("imported"));
    assert_eq!(mine["state"], "verified");
    assert!(store_dir.join("my-smol").is_dir());
    let used = call(serde_json::json!({"op": "use_model", "name": "my-smol"})).unwrap();
    assert_eq!(used["llm"], "my-smol");
    assert_eq!(find(&used, "my-smol")["in_use"], true);
    assert_eq!(find(&used, ENGINE_LLM)["in_use"], false);
    let health = call(serde_json::json!({"op": "health"})).unwrap();
    assert_eq!(health["llm"], "my-smol");
}
