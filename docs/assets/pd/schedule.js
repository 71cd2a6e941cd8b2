// Heavy jobs (loading the chart library, drawing a chart, adding its frames) run one at a time, each
// in a task of its own after a painted frame, and never while a demo is playing: playback's frames
// stay free, and no single task holds the main thread for long.
const playing = new Set();
const idleWaiters = [];
const queue = [];
let running = false;

/** Record whether the player `id` is playing; jobs wait while any player is. */
export function setPlaying(id, isPlaying) {
  if (isPlaying) playing.add(id);
  else playing.delete(id);
  if (!playing.size) idleWaiters.splice(0).forEach((resolve) => resolve());
}

/** Resolves in a fresh task after the next frame is painted. */
export function afterPaint() {
  return new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 0)));
}

async function drain() {
  running = true;
  while (queue.length) {
    if (playing.size) await new Promise((resolve) => idleWaiters.push(resolve)); // until nothing plays
    await afterPaint();
    if (playing.size) continue; // playback started while this frame was being painted
    const { job, resolve, reject } = queue.shift();
    try {
      resolve(await job());
    } catch (error) {
      reject(error);
    }
  }
  running = false;
}

/** Run `job()` (sync or async) in its turn; resolves to its result. */
export function schedule(job) {
  return new Promise((resolve, reject) => {
    queue.push({ job, resolve, reject });
    if (!running) drain();
  });
}
