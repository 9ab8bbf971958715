// A WebXR system as a phone's browser has it, for tests/web/test_phone_webxr.py (injected
// with add_init_script): the modes of window.xrModes supported (default immersive-ar and
// inline; an inline session tracks only with window.xrInlineLocal); a session's
// requestAnimationFrame hands frames whose viewer pose (in the "local" space) is
// window.xrPose, which the test sets.
(() => {
  window.xrPose = { p: [0, 0, 0], q: [0, 0, 0, 1] };
  window.xrLog = { sessions: [] };
  class FakeSession extends EventTarget {
    constructor(mode, options) {
      super();
      Object.assign(this, { mode, options, over: false });
    }
    async requestReferenceSpace(type) {
      const tracked = this.mode !== "inline" || window.xrInlineLocal; // a desktop's is not
      if (type !== "local" || !tracked) throw new DOMException("unsupported", "NotSupportedError");
      return { type };
    }
    requestAnimationFrame(callback) {
      return window.requestAnimationFrame((time) => {
        if (this.over) return;
        const [x, y, z] = window.xrPose.p;
        const [qx, qy, qz, qw] = window.xrPose.q;
        const transform = {
          position: { x, y, z, w: 1 },
          orientation: { x: qx, y: qy, z: qz, w: qw },
        };
        const getViewerPose = (space) => (space.type === "local" ? { transform } : null);
        callback(time, { session: this, getViewerPose });
      });
    }
    async end() { if (!this.over) { this.over = true; this.dispatchEvent(new Event("end")); } }
  }
  const xr = {
    isSessionSupported: async (mode) => (window.xrModes || ["immersive-ar", "inline"]).includes(mode),
    requestSession: async (mode, options) => {
      const session = new FakeSession(mode, options);
      window.xrLog.sessions.push(session);
      return session;
    },
  };
  Object.defineProperty(Navigator.prototype, "xr", { get: () => xr, configurable: true });
})();
