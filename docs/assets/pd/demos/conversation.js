// conversation (two-phases): the prompt as a chat bubble, prefill lighting every prompt token at once,
// the first token with its TTFT, then the answer at its recorded pace while the KV cache fills. Below it,
// the reader may run the real model on their own device (mountLive).
import { h, meter, setText, tokenChip } from "../dom.js";
import { playRecording, prepareStage, readout } from "../stage.js";
import { answerView, phaseBadge, promptView, renderTurn, rolesLegend } from "../tokens.js";

export function mount(demo, data, { reducedMotion }) {
  const { stage, text, format } = prepareStage(demo, data, { focusable: true });
  const steps = data.steps;
  const fullCache = steps[steps.length - 1].kv_tokens;

  const prompt = promptView(data.prompt.tokens, data.prompt.text);
  const answer = answerView(steps, data.answer, text);
  const phase = phaseBadge(text);
  const elapsed = h("span", { class: "pd-elapsed" });
  const ttft = readout(text("common.ttft"));
  const rate = readout(text("common.tps"));
  const cache = meter(text("common.kv_cache"));

  stage.append(
    h("div", { class: "pd-chat" },
      h("div", { class: "pd-bubble pd-bubble--user" },
        h("span", { class: "pd-bubble__who", text: text("conversation.user") }), prompt.node,
        rolesLegend(data.prompt, text)),
      h("div", { class: "pd-bubble pd-bubble--model" },
        h("span", { class: "pd-bubble__who", text: text("conversation.assistant") }), answer.node)),
    h("div", { class: "pd-status" }, phase.node, elapsed,
      h("dl", { class: "pd-readouts" }, ttft.node, rate.node)),
    cache.node,
  );

  if (data.live) mountLive(demo, stage, data, text, format);

  playRecording(demo, stage, steps, {
    text,
    reducedMotion,
    describe: () => answer.shownText() || text("common.waiting"),
    render(state) {
      const step = renderTurn({ phase, prompt, answer, elapsed, ttft, cache }, state,
        { text, format, steps, share: (shown) => shown.kv_tokens / fullCache });
      // TPS as the build reports it at this step (none before the first decode step).
      setText(rate.value, step?.tps ? `${format.number(step.tps)} tok/s` : "–");
    },
  });
}

// --- "Run it on this device": the real model on the reader's own device -----------------------------
// Only the control is built here; the manifest, the tokenizer, the worker, its kernels and the weights are
// fetched after the press (../device/live.js). The run's result is on the page as data-pd-live-result.

const LIVE_STYLE_URL = new URL("../device/live.css", import.meta.url);
const LIVE_FAILURES = ["network", "integrity", "memory", "load", "kernel", "worker", "silent"];
const LIVE_CONTEXT = 2048; // tokens a run may hold (prompt and answer)

function loadLiveStyle() {
  if (document.querySelector(`link[href="${LIVE_STYLE_URL.href}"]`)) return;
  document.head.append(h("link", { rel: "stylesheet", href: LIVE_STYLE_URL.href }));
}

function formatsText(formats) {
  // Bytes per format, largest first: "Q4_1, Q8_0, F32".
  return Object.entries(formats).sort((a, b) => b[1] - a[1]).map(([name]) => name.toUpperCase()).join(" + ");
}

function mountLive(demo, stage, data, text, format) {
  const live = data.live;
  const id = `${demo.id || "pd-conversation"}-live`;
  const title = h("p", { class: "pd-live__title", id: `${id}-title`, text: text("live.title") });
  const section = h("div", { class: "pd-live", role: "group", "aria-labelledby": `${id}-title` }, title);
  stage.after(section);
  // Keys typed here are the reader's text and buttons, not the player's (Space plays, arrows step).
  section.addEventListener("keydown", (event) => event.stopPropagation());
  if (!live.available) {
    section.append(h("p", { class: "pd-live__note", text: text("live.unavailable") }));
    demo.dataset.pdLiveState = "unavailable";
    return;
  }
  loadLiveStyle();
  const query = new URLSearchParams(window.location.search);
  const refuseStorage = query.get("pd-live-storage") === "refuse"; // tests: a browser that refuses storage
  // Tests: a lost worker found sooner; a pause between decode steps, so that Stop or a lost worker lands mid-run.
  const silenceLimitS = Number(query.get("pd-live-silence")) || undefined;
  const paceMs = Number(query.get("pd-live-pace")) || 0;
  const megabytes = format.number(live.download_bytes / 1e6);
  const promptBox = h("textarea", { class: "pd-live__prompt", id: `${id}-prompt`, rows: 2 });
  promptBox.value = live.prompt;
  const maxBox = h("input", { type: "number", class: "pd-select pd-live__max", id: `${id}-max`, min: 1, max: 512,
    value: live.max_new_tokens });
  const runButton = h("button", { type: "button", class: "pd-button pd-button--play" }, text("live.run"));
  const stopButton = h("button", { type: "button", class: "pd-button", disabled: true }, text("live.stop"));
  const forgetButton = h("button", { type: "button", class: "pd-button" }, text("live.forget"));
  const bar = h("progress", { class: "pd-live__progress", max: 100, value: 0, hidden: true, "aria-label": text("live.title") });
  const status = h("p", { class: "pd-live__status", role: "status", "aria-live": "polite" });
  const storage = h("p", { class: "pd-live__note" });
  const promptLabel = h("p", { class: "pd-live__note" });
  const chips = h("p", { class: "pd-prompt", "aria-hidden": "true" });
  const phase = phaseBadge(text);
  const answer = h("p", { class: "pd-live__answer" });
  const ttft = readout(text("live.ttft"));
  const rate = readout(text("live.tps"));
  const kv = readout(text("live.kv_cache"));
  const backend = h("p", { class: "pd-live__note" });
  const view = h("div", { class: "pd-live__view", hidden: true }, promptLabel, chips,
    h("div", { class: "pd-status" }, phase.node, h("dl", { class: "pd-readouts" }, ttft.node, rate.node, kv.node)),
    answer, backend, storage);
  section.append(
    h("p", { class: "pd-live__note", id: `${id}-intro`,
      text: text("live.intro", { model: live.model, formats: formatsText(live.formats), megabytes }) }),
    h("p", { class: "pd-live__note", text: text("live.english_only") }),
    h("label", { class: "pd-field pd-live__field", for: `${id}-prompt` },
      h("span", { text: text("live.prompt") }), promptBox),
    h("div", { class: "pd-fields" },
      h("label", { class: "pd-field", for: `${id}-max` }, h("span", { text: text("live.max_tokens") }), maxBox),
      runButton, stopButton, forgetButton),
    bar, status, view);
  runButton.setAttribute("aria-describedby", `${id}-intro`);

  // generating: the prompt is with the worker (Stop then ends the run after the current step, keeping its tokens).
  const state = { session: null, running: false, generating: false, stopping: false, run: 0 };
  demo.dataset.pdLiveState = "idle";

  function setRunning(running) {
    state.running = running;
    state.generating &&= running;
    state.stopping &&= running;
    runButton.disabled = running;
    forgetButton.disabled = running;
    promptBox.disabled = running;
    maxBox.disabled = running;
    stopButton.disabled = !running;
  }

  function fail(error) {
    const kind = LIVE_FAILURES.includes(error?.kind) ? error.kind : "kernel";
    state.session?.close(); // a failed worker is not reused: Retry starts from the cached files
    state.session = null;
    setRunning(false);
    bar.hidden = true;
    demo.dataset.pdLiveState = "error";
    demo.dataset.pdLiveFailure = kind;
    setText(status, text(`live.failed_${kind}`, { message: String(error?.message || error), seconds: error?.seconds }));
    setText(runButton, text("live.retry"));
    runButton.focus();
  }

  async function run() {
    const message = promptBox.value.trim();
    if (!message) {
      setText(status, text("live.empty_prompt"));
      promptBox.focus();
      return;
    }
    const maxNew = Math.max(1, Math.min(512, Math.round(Number(maxBox.value)) || live.max_new_tokens));
    const pressed = performance.now();
    const run = ++state.run;
    delete demo.dataset.pdLiveFailure;
    delete section.dataset.pdLiveResult;
    demo.dataset.pdLiveState = "loading";
    setRunning(true);
    stopButton.focus();
    try {
      const { LiveSession } = await import("../device/live.js");
      state.session ||= new LiveSession(live, { refuseStorage, silenceLimitS, paceMs });
      const session = state.session;
      bar.hidden = false;
      const ready = await session.open(({ stage: step, loaded, total }) => {
        if (step === "manifest") setText(status, text("live.stage_manifest"));
        else {
          bar.value = Math.round((100 * loaded) / total);
          setText(status, text("live.stage_download", { loaded: format.number(loaded / 1e6, 0), total: format.number(total / 1e6, 0) }));
        }
      });
      bar.hidden = true;
      setText(storage, ready.storage === "kept" ? text(ready.from_cache ? "live.from_cache" : "live.storage_kept")
        : text("live.storage_memory"));
      setText(backend, text("live.backend", { relaxed: ready.variant === "relaxed" ? text("live.relaxed") : "" }));
      setText(status, text("live.stage_tokenize"));
      const ids = session.encode(session.render(message, live.chat));
      if (ids.length + maxNew > LIVE_CONTEXT) { // weights, cache and activations stay under 400 MB up to here
        throw Object.assign(new Error(`${ids.length} + ${maxNew} tokens: more than the ${LIVE_CONTEXT} this page holds`),
          { kind: "memory" });
      }
      chips.textContent = "";
      chips.append(...session.pieces(ids).map((piece) => tokenChip(piece)));
      setText(promptLabel, text("live.prompt_tokens", { tokens: format.number(ids.length, 0) }));
      answer.textContent = "";
      for (const r of [ttft, rate]) setText(r.value, "–");
      setText(kv.value, text("live.kv_value", { tokens: format.number(0, 0) }));
      view.hidden = false;
      phase.set("prefill");
      chips.classList.add("pd-prompt--reading");
      setText(status, text("live.stage_prefill", { tokens: format.number(ids.length, 0) }));
      demo.dataset.pdLiveState = "running";
      state.generating = true;
      const decoder = new TextDecoder("utf-8");
      const generated = [];
      const stops = new Set(session.stopIds);
      let decodeMs = 0, firstTokenMs = 0, prefillMs = 0;
      const sent = performance.now();
      const show = (token) => {
        generated.push(token);
        if (!stops.has(token)) answer.append(decoder.decode(session.tokenBytes(token), { stream: true }));
      };
      const reason = await session.generate(ids, maxNew, {
        prefill({ token, ms, kv_tokens: cached }) {
          firstTokenMs = performance.now() - sent;
          prefillMs = ms;
          chips.classList.replace("pd-prompt--reading", "pd-prompt--cached");
          phase.set("decode");
          setText(status, text("live.stage_decode_running")); // once: a status read out every token would drown the answer
          setText(ttft.value, format.ms(firstTokenMs));
          setText(kv.value, text("live.kv_value", { tokens: format.number(cached, 0) }));
          show(token);
        },
        token({ token, ms, kv_tokens: cached }) {
          decodeMs += ms;
          show(token);
          setText(rate.value, `${format.number((1000 * (generated.length - 1)) / decodeMs)} tok/s`);
          setText(kv.value, text("live.kv_value", { tokens: format.number(cached, 0) }));
        },
      });
      answer.append(decoder.decode());
      if (run !== state.run) return;
      phase.set("done");
      setRunning(false);
      setText(status, reason === "length" ? text("live.done_length", { tokens: format.number(maxNew, 0) })
        : text(`live.done_${reason}`));
      setText(runButton, text("live.run"));
      runButton.focus();
      const decoded = generated.length - 1;
      section.dataset.pdLiveResult = JSON.stringify({
        prompt: message, prompt_tokens: ids, generated_ids: generated, text: answer.textContent,
        ttft_ms: firstTokenMs, prefill_ms: prefillMs, press_to_first_token_ms: firstTokenMs + (sent - pressed),
        open_ms: sent - pressed, // press to the prompt sent: the weights read (or fetched), the tokenizer built
        decode_tokens: decoded, decode_tps: decoded > 0 ? (1000 * decoded) / decodeMs : null,
        stop_reason: reason, format: live.formats, backend: `wasm-${ready.variant}`, workers: 1,
        storage: ready.storage, from_cache: ready.from_cache,
      });
      demo.dataset.pdLiveState = "done";
    } catch (error) {
      if (run === state.run) fail(error);
    }
  }

  runButton.addEventListener("click", () => { if (!state.running) run(); });
  stopButton.addEventListener("click", () => {
    if (!state.running || state.stopping) return;
    state.stopping = true;
    if (state.generating) {
      // The worker ends after the step it is in; the run then finishes as any other, its tokens kept. The button
      // stays enabled meanwhile, so focus stays on it until it moves to Run.
      state.session?.stop();
      return;
    }
    // Still loading: the worker (and its download) ends now; the files already kept stay for the next press.
    state.run += 1;
    state.session?.close();
    state.session = null;
    setRunning(false);
    bar.hidden = true;
    demo.dataset.pdLiveState = "idle";
    setText(status, text("live.done_stopped"));
    setText(runButton, text("live.run"));
    runButton.focus();
  });
  forgetButton.addEventListener("click", async () => {
    const { forget } = await import("../device/live-store.js");
    state.session?.close();
    state.session = null;
    setText(status, text((await forget()) ? "live.forgotten" : "live.nothing_to_forget"));
  });
}
