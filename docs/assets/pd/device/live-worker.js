// The live model's worker, started by demos/conversation.js at the reader's press. Messages in:
//   {type: "load", manifest, modelBase, refuseStorage}  fetch the chunks (Cache Storage first), check, place them
//   {type: "generate", ids, maxNew, stopIds, paceMs}     prefill the prompt in one pass, then decode token by token
//                                                        (paceMs: the tests' pause between steps, else none)
//   {type: "stop"}                                       end the generation after the current step
//   {type: "logits", ids, steps}                         for the tests: the prompt's last logits, then `steps` greedy
//                                                        decode steps' logits (tests/browser/test_live.py)
// Messages out: {type: "progress", loaded, total}, {type: "alive"} (a prefill's layer done), {type: "ready", ...},
// {type: "prefill", ...}, {type: "token", ...}, {type: "done", reason}, {type: "error", kind, message},
// {type: "logits", tokens, logits}. One worker runs everything: a decode step's layers would each wait for a
// message round trip (0.1-0.2 ms) if split among workers (docs/assets/pd/device/README.md).
import { DeviceError, loadKernels } from "./wasm.js";
import { argmax, loadWeights } from "./live-model.js";
import { openStore } from "./live-store.js";

let model = null;
let loaded = null; // {variant, storage}
let stopping = false;

const post = (message) => self.postMessage(message);

// A pause between decode steps in which a "stop" message can arrive (a MessageChannel task: no 4 ms clamp), or the
// tests' longer one (so that Stop, or a worker ended, lands mid-run even on the tiny model).
const channel = new MessageChannel();
function pause(paceMs) {
  return new Promise((resolve) => {
    if (paceMs > 0) {
      setTimeout(resolve, paceMs);
      return;
    }
    channel.port1.onmessage = () => resolve();
    channel.port2.postMessage(0);
  });
}

async function load({ manifest, modelBase, refuseStorage }) {
  if (model && model.manifest.file_bytes === manifest.file_bytes && loaded.digest === manifest.chunks[0].sha256) {
    post({ type: "ready", ...loaded, reused: true });
    return;
  }
  const kernels = await loadKernels();
  if (!kernels) throw new DeviceError("load", "this browser has no WebAssembly SIMD");
  const store = await openStore(refuseStorage);
  let done = 0;
  const placed = await loadWeights(kernels, manifest, modelBase, store, (n) => {
    done += n;
    post({ type: "progress", loaded: done, total: manifest.file_bytes });
  });
  model = placed.model;
  loaded = { variant: kernels.variant, storage: store ? (placed.kept ? "kept" : "memory") : "refused",
    from_cache: placed.fromCache, digest: manifest.chunks[0].sha256 };
  post({ type: "ready", ...loaded });
}

async function generate({ ids, maxNew, stopIds, paceMs = 0 }) {
  const stops = new Set(stopIds);
  const tokens = ids.length + maxNew;
  try {
    model.prepare(tokens, ids.length);
  } catch (error) {
    throw error instanceof DeviceError ? error : new DeviceError("memory", String(error?.message || error));
  }
  stopping = false;
  const started = performance.now();
  // A word after every layer of the prompt's pass: the page takes a long silence for a lost worker.
  let token = argmax(model.forward(ids, () => post({ type: "alive" })));
  const prefillMs = performance.now() - started;
  post({ type: "prefill", ms: prefillMs, token, kv_tokens: model.length });
  let generated = 1;
  while (!stops.has(token) && generated < maxNew) {
    await pause(paceMs);
    if (stopping) {
      post({ type: "done", reason: "stopped" });
      return;
    }
    const start = performance.now();
    token = argmax(model.forward([token]));
    generated += 1;
    post({ type: "token", token, ms: performance.now() - start, kv_tokens: model.length });
  }
  post({ type: "done", reason: stops.has(token) ? "end" : "length" });
}

/** Prefill's last logits and those of `steps` greedy decode steps after it, each a Float32Array copy. */
function logits({ ids, steps }) {
  model.prepare(ids.length + steps, ids.length);
  const rows = [model.forward(ids).slice()];
  const tokens = [argmax(rows[0])];
  for (let s = 0; s < steps; s += 1) {
    rows.push(model.forward([tokens[s]]).slice());
    tokens.push(argmax(rows[s + 1]));
  }
  self.postMessage({ type: "logits", tokens, logits: rows }, rows.map((row) => row.buffer));
}

self.addEventListener("message", async ({ data }) => {
  if (data?.type === "stop") {
    stopping = true;
    return;
  }
  try {
    if (data?.type === "load") await load(data);
    else if (data?.type === "generate") await generate(data);
    else if (data?.type === "logits") logits(data);
  } catch (error) {
    const kind = error?.kind || (error instanceof RangeError ? "memory" : "kernel");
    post({ type: "error", kind, message: String(error?.message || error) });
  }
});
