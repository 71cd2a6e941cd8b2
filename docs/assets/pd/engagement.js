// The reader's first gesture, and a node nearing the viewport. Heavy work (the chart library, drawing
// charts) waits for the gesture, so loading a page stays light: a reader who only reads pays for nothing
// they do not use. Scrolling, a wheel, a pointer, a key or a touch all count; pressing a demo's control is
// one of them. So do a click and a focus change, which are all a screen reader may send when its reader
// activates or enters a control.
const GESTURES = ["scroll", "wheel", "pointerdown", "pointermove", "keydown", "touchstart", "click", "focusin"];
const OPTIONS = { capture: true, passive: true };

const engaged = new Promise((resolve) => {
  function onGesture() {
    for (const type of GESTURES) window.removeEventListener(type, onGesture, OPTIONS);
    resolve();
  }
  for (const type of GESTURES) window.addEventListener(type, onGesture, OPTIONS);
});

/** Resolves at the reader's first gesture (at once if it already happened). */
export function whenEngaged() {
  return engaged;
}

/** Resolves once `node` comes within `margin` (a rootMargin, "600px 0px") of the viewport. */
export function whenNear(node, margin) {
  return new Promise((resolve) => {
    const observer = new IntersectionObserver((entries) => {
      if (!entries.some((entry) => entry.isIntersecting)) return;
      observer.disconnect();
      resolve();
    }, { rootMargin: margin });
    observer.observe(node);
  });
}
