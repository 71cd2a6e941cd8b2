// The page's side of the live model, loaded by demos/conversation.js at the reader's press: the manifest
// (from Cache Storage or fetched, checked against the digest in its name), the tokenizer and chat template
// (@huggingface/tokenizers and @huggingface/jinja, pinned in .ci/package-lock.json and published with the
// site), and the worker that holds the weights (live-worker.js). Text is assembled from the tokens' bytes
// with a streaming UTF-8 decoder, so a character split across tokens never shows broken.
import { DeviceError } from "./wasm.js";
import { checkedFile, openStore } from "./live-store.js";

const WORKER_URL = new URL("./live-worker.js", import.meta.url);
const MODEL_BASE = new URL("../model/", import.meta.url);
const TOKENIZERS_URL = new URL("../../vendor/tokenizers.mjs", import.meta.url);
const JINJA_URL = new URL("../../vendor/jinja.mjs", import.meta.url);

/** GPT-2's byte-level alphabet inverted: the character a byte-level BPE token uses -> that byte. */
function byteOfChar() {
  const printable = [];
  for (let b = 0x21; b <= 0x7e; b += 1) printable.push(b);
  for (let b = 0xa1; b <= 0xac; b += 1) printable.push(b);
  for (let b = 0xae; b <= 0xff; b += 1) printable.push(b);
  const map = new Map(printable.map((b) => [String.fromCodePoint(b), b]));
  let next = 256;
  for (let b = 0; b < 256; b += 1) if (!printable.includes(b)) map.set(String.fromCodePoint(next++), b);
  return map;
}

async function importLibrary(url) {
  try {
    return await import(url.href);
  } catch (error) {
    throw new DeviceError("load", `${url.pathname}: ${error?.message || error}`);
  }
}

// A worker that says nothing for this long while it is asked something is taken as lost: a browser that ends a
// worker (to reclaim memory, say) tells the page nothing. The worker speaks at every chunk it reads, every layer of
// a prefill and every decode step, each well under a second on a phone.
export const SILENCE_LIMIT_S = 60;

export class LiveSession {
  /**
   * descriptor: the demo JSON's `live`; refuseStorage: the tests' way to play a browser that refuses storage;
   * silenceLimitS: how long the worker may be silent before it counts as lost (shorter in the tests); paceMs: the
   * tests' pause between decode steps.
   */
  constructor(descriptor, { refuseStorage = false, silenceLimitS = SILENCE_LIMIT_S, paceMs = 0 } = {}) {
    this.descriptor = descriptor;
    this.refuseStorage = refuseStorage;
    this.silenceLimitS = silenceLimitS;
    this.paceMs = paceMs;
    this.worker = null;
    this.ready = null;
    this.handlers = {};
  }

  /** Wait for the worker's answer: `on(data, resolve, reject)` sees each message; a silent or failed worker rejects. */
  ask(on) {
    return new Promise((resolve, reject) => {
      const settle = (fn) => (value) => {
        clearInterval(this.watchdog);
        this.handlers = {};
        fn(value);
      };
      const done = settle(resolve), failed = settle(reject);
      this.handlers = { reject: failed, message: (data) => on(data, done, failed) };
      this.heard = performance.now();
      clearInterval(this.watchdog);
      this.watchdog = setInterval(() => {
        if (document.hidden) this.heard = performance.now(); // a hidden tab's worker may be frozen with it
        else if (performance.now() - this.heard > 1000 * this.silenceLimitS) {
          failed(Object.assign(new DeviceError("silent", `no word from the worker for ${this.silenceLimitS} s`),
            { seconds: this.silenceLimitS }));
        }
      }, Math.min(1000, 250 * this.silenceLimitS));
    });
  }

  /** Manifest, tokenizer and worker with the weights in place. onProgress({stage, loaded, total}). */
  async open(onProgress) {
    if (this.ready) return this.ready;
    onProgress({ stage: "manifest" });
    const name = this.descriptor.manifest;
    const digest = name.replace(/^manifest-/, "").replace(/\.json$/, "");
    const store = await openStore(this.refuseStorage);
    const { buffer } = await checkedFile(store, new URL(name, MODEL_BASE), digest, 0);
    const manifest = JSON.parse(new TextDecoder().decode(buffer));
    const { tokenizer: _dropped, ...forWorker } = manifest;
    let worker;
    try {
      worker = new Worker(WORKER_URL, { type: "module", name: "pd-live" });
    } catch (error) {
      throw new DeviceError("load", String(error?.message || error));
    }
    this.worker = worker;
    worker.onmessage = ({ data }) => {
      this.heard = performance.now();
      this.handlers.message?.(data);
    };
    worker.onerror = (event) => {
      event.preventDefault();
      this.handlers.reject?.(new DeviceError("worker", event.message || WORKER_URL.pathname));
    };
    this.ready = this.ask((data, resolve, reject) => {
      if (data.type === "progress") onProgress({ stage: "download", loaded: data.loaded, total: data.total });
      else if (data.type === "ready") resolve(data);
      else if (data.type === "error") reject(new DeviceError(data.kind, data.message));
    });
    this.ready.catch(() => {}); // awaited below, after the tokenizer: a failure meanwhile is not "unhandled"
    worker.postMessage({ type: "load", manifest: forWorker, modelBase: MODEL_BASE.href, refuseStorage: this.refuseStorage });
    try {
      // The tokenizer is built here while the worker reads the weights.
      const [{ Tokenizer }, { Template }] = await Promise.all([importLibrary(TOKENIZERS_URL), importLibrary(JINJA_URL)]);
      const spec = manifest.tokenizer;
      this.tokenizer = new Tokenizer(spec.json, { clean_up_tokenization_spaces: false });
      this.template = new Template(spec.chat_template);
      this.vocab = this.tokenizer.model.vocab;
      this.special = new Set(spec.special_ids);
      this.stopIds = spec.stop_ids;
      this.bytes = byteOfChar();
      this.manifest = manifest;
      return await this.ready;
    } catch (error) {
      this.close();
      throw error;
    }
  }

  /** The prompt as the model reads it: the chat template around the reader's message (or the message alone). */
  render(message, chat) {
    return chat ? this.template.render({ messages: [{ role: "user", content: message }], add_generation_prompt: true,
      bos_token: "", eos_token: "" }) : message;
  }

  encode(text) {
    return this.tokenizer.encode(text, { add_special_tokens: false }).ids;
  }

  /** A token's bytes: a special token's own text, else its byte-level characters mapped back to bytes. */
  tokenBytes(id) {
    const piece = this.vocab[id] ?? "";
    if (this.special.has(id)) return new TextEncoder().encode(piece);
    return Uint8Array.from([...piece].map((c) => this.bytes.get(c) ?? 0x3f));
  }

  /** The prompt's tokens as chips show them: each token's characters (whole ones), partial where it splits one. */
  pieces(ids) {
    const decoder = new TextDecoder("utf-8");
    return ids.map((id) => {
      const bytes = this.tokenBytes(id);
      const text = decoder.decode(bytes, { stream: true });
      return { id, text: text || "\u00a0", partial: text === "" || /\ufffd/.test(text),
        bytes: Array.from(bytes, (b) => b.toString(16).toUpperCase().padStart(2, "0")).join(" ") };
    });
  }

  /**
   * Prefill `ids` in one pass, then decode until a stop token or `maxNew` tokens. on: {prefill, token, done}.
   * Resolves when the worker says it is done; `stop()` ends it after the current step.
   */
  generate(ids, maxNew, on) {
    const answer = this.ask((data, resolve, reject) => {
      if (data.type === "prefill") on.prefill(data);
      else if (data.type === "token") on.token(data);
      else if (data.type === "done") resolve(data.reason);
      else if (data.type === "error") reject(new DeviceError(data.kind, data.message));
    });
    this.worker.postMessage({ type: "generate", ids, maxNew, stopIds: this.stopIds, paceMs: this.paceMs });
    return answer;
  }

  stop() {
    this.worker?.postMessage({ type: "stop" });
  }

  /** End the worker; a question still waiting for it rejects with a "stopped" error. */
  close() {
    this.worker?.terminate();
    this.worker = null;
    this.ready = null;
    this.handlers.reject?.(new DeviceError("stopped", "the worker was ended"));
  }
}
