// RLDS Studio: the API reference at /docs, drawn by the vendored Swagger UI (web/vendor/)
// from /openapi.json. A file of its own: the pages' Content-Security-Policy allows no
// inline script.
/* global SwaggerUIBundle */

/** The value of cookie ``name`` ("" when it is not set). */
function cookie(name) {
  for (const part of document.cookie.split(";")) {
    const [key, ...rest] = part.trim().split("=");
    if (key === name) return decodeURIComponent(rest.join("="));
  }
  return "";
}

window.ui = SwaggerUIBundle({
  url: "/openapi.json",
  dom_id: "#swagger-ui",
  layout: "BaseLayout",
  presets: [SwaggerUIBundle.presets.apis],
  deepLinking: true,
  showExtensions: true,
  showCommonExtensions: true,
  validatorUrl: null, // the public validator is another origin
  // "Try it out" after logging in on the studio page: writes need the CSRF header.
  requestInterceptor: (request) => {
    const csrf = cookie("studio_csrf");
    if (csrf) request.headers["X-CSRF-Token"] = csrf;
    return request;
  },
});
