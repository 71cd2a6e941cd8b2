// The live model's files, fetched only after the reader's press and kept in Cache Storage, each checked on
// arrival against the SHA-256 its name or the manifest gives. Used by the page (the manifest) and by the worker
// (the chunks). Where storage is refused (a private window, a full disk) the files are used from memory.
import { DeviceError } from "./wasm.js";

export const CACHE_NAME = "pd-live-model";

/** The hex SHA-256 of an ArrayBuffer (Web Crypto: a secure context, as https or localhost). */
export async function sha256(buffer) {
  if (!globalThis.crypto?.subtle) throw new DeviceError("load", "this page is not a secure context: the model's files cannot be checked");
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", buffer));
  return Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** The cache, or null where the browser refuses storage (`refuse`: the tests' way to ask for that case). */
export async function openStore(refuse = false) {
  if (refuse || !globalThis.caches) return null;
  try {
    return await caches.open(CACHE_NAME);
  } catch {
    return null;
  }
}

/** Forget every file kept (the page's "forget" control). Resolves to whether anything was kept. */
export async function forget() {
  if (!globalThis.caches) return false;
  try {
    return await caches.delete(CACHE_NAME);
  } catch {
    return false;
  }
}

async function download(url, size, onBytes) {
  let response;
  try {
    response = await fetch(url, { cache: "no-store" });
  } catch (error) {
    throw new DeviceError("network", `${url.pathname}: ${error?.message || error}`);
  }
  if (!response.ok) throw new DeviceError("network", `${url.pathname}: HTTP ${response.status}`);
  if (!response.body || !size) return response.arrayBuffer();
  const bytes = new Uint8Array(size);
  const reader = response.body.getReader();
  let at = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (at + value.length > size) throw new DeviceError("integrity", `${url.pathname}: more than the ${size} bytes the manifest lists`);
    bytes.set(value, at);
    at += value.length;
    onBytes(value.length);
  }
  return at === size ? bytes.buffer : bytes.buffer.slice(0, at);
}

/**
 * The bytes of `url`, whose SHA-256 must be `digest` (or start with it, for a name that carries a prefix):
 * from the store when kept there and intact, else fetched (once more if they arrive wrong, then a clear
 * "integrity" error) and kept. Resolves to {buffer, cached, kept}.
 */
export async function checkedFile(store, url, digest, size, onBytes = () => {}) {
  const matches = (hex) => hex.startsWith(digest);
  if (store) {
    try {
      const hit = await store.match(url.href);
      if (hit) {
        // Checked when it arrived and kept as it was put: read back whole, it is used (hashing 100 MB again would
        // add about half a second to every start); a copy of another length is fetched again.
        const buffer = await hit.arrayBuffer();
        if (!size || buffer.byteLength === size) {
          onBytes(buffer.byteLength);
          return { buffer, cached: true, kept: true };
        }
        await store.delete(url.href);
      }
    } catch {
      // a store that fails to read is treated as empty
    }
  }
  let got = "";
  for (let attempt = 0; attempt < 2; attempt += 1) {
    let counted = 0;
    const buffer = await download(url, size, (n) => { counted += n; onBytes(n); });
    got = await sha256(buffer);
    if (matches(got)) {
      let kept = false;
      if (store) {
        try {
          await store.put(url.href, new Response(buffer.slice(0)));
          kept = true;
        } catch {
          kept = false; // quota exceeded or storage refused: run from memory
        }
      }
      return { buffer, cached: false, kept };
    }
    onBytes(-counted);
  }
  throw new DeviceError("integrity", `${url.pathname}: its SHA-256 is ${got}, not ${digest} (fetched twice)`);
}
