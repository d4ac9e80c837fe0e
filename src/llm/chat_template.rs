//! Renders the chat template stored in the GGUF file (`tokenizer.chat_template`, a Jinja
//! template written for Python's transformers) with minijinja, so no model needs a
//! hand-written prompt format.

use anyhow::{anyhow, Result};
use minijinja::{context, Environment, Error, ErrorKind};
use serde::Serialize;

#[derive(Debug, Clone, Serialize)]
pub struct Message {
    pub role: String,
    pub content: String,
}

impl Message {
    pub fn new(role: &str, content: &str) -> Self {
        Message {
            role: role.into(),
            content: content.into(),
        }
    }
}

/// Used when a GGUF file carries no template: ChatML, which SmolLM2 and Qwen2 use.
pub const CHATML: &str = "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";

/// Gemma's turn format (a base Gemma file carries no template; ChatML's markers are not
/// tokens of its vocabulary). A system message goes before the first user turn, as
/// Gemma's own template does.
pub const GEMMA: &str = "{{ bos_token }}{% set sys = namespace(text='') %}{% for message in messages %}{% if message['role'] == 'system' %}{% set sys.text = message['content'] + '\n\n' %}{% else %}{{ '<start_of_turn>' + ('model' if message['role'] == 'assistant' else message['role']) + '\n' + sys.text + message['content'] + '<end_of_turn>\n' }}{% set sys.text = '' %}{% endif %}{% endfor %}{% if add_generation_prompt %}{{ '<start_of_turn>model\n' }}{% endif %}";

/// The template to use when a file has none: its family's own turn format.
pub fn fallback_for(architecture: &str) -> &'static str {
    match architecture {
        "gemma3" => GEMMA,
        _ => CHATML,
    }
}

pub struct ChatTemplate {
    env: Environment<'static>,
    bos_token: String,
    eos_token: String,
}

impl ChatTemplate {
    pub fn new(source: &str, bos_token: &str, eos_token: &str) -> Result<Self> {
        let mut env = Environment::new();
        // Python-style string methods (.strip(), .startswith(), …) that HF templates use.
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        env.add_function("raise_exception", |msg: String| -> Result<String, Error> {
            Err(Error::new(ErrorKind::InvalidOperation, msg))
        });
        env.add_template_owned("chat", source.to_string())
            .map_err(|e| anyhow!("the model's chat template does not parse: {e}"))?;
        Ok(ChatTemplate {
            env,
            bos_token: bos_token.into(),
            eos_token: eos_token.into(),
        })
    }

    pub fn render(&self, messages: &[Message], add_generation_prompt: bool) -> Result<String> {
        let tmpl = self.env.get_template("chat")?;
        tmpl.render(context! {
            messages => messages,
            add_generation_prompt => add_generation_prompt,
            bos_token => self.bos_token,
            eos_token => self.eos_token,
        })
        .map_err(|e| anyhow!("rendering the chat template: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gemma_fallback_writes_gemma_turns() {
        let t = ChatTemplate::new(fallback_for("gemma3"), "<bos>", "<eos>").unwrap();
        let text = t
            .render(
                &[
                    Message::new("system", "Be brief."),
                    Message::new("user", "Hi"),
                ],
                true,
            )
            .unwrap();
        assert_eq!(
            text,
            "<bos><start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n<start_of_turn>model\n"
        );
    }

    #[test]
    fn chatml_fallback_renders_roles_and_generation_prompt() {
        let t = ChatTemplate::new(CHATML, "", "<|im_end|>").unwrap();
        let s = t
            .render(
                &[Message::new("system", "S"), Message::new("user", "U")],
                true,
            )
            .unwrap();
        assert_eq!(
            s,
            "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\n"
        );
    }

    #[test]
    fn python_string_methods_and_raise_exception_work() {
        let t = ChatTemplate::new(
            "{% if messages[0]['role'] != 'user' %}{{ raise_exception('bad') }}{% endif %}{{ messages[0]['content'].strip() }}",
            "",
            "",
        )
        .unwrap();
        assert_eq!(
            t.render(&[Message::new("user", "  hi ")], false).unwrap(),
            "hi"
        );
        let err = t.render(&[Message::new("system", "x")], false).unwrap_err();
        assert!(err.to_string().contains("bad"), "{err}");
    }
}
