// The interactive API reference (/docs): Swagger UI on the OpenAPI document its element
// names (data-openapi-url). A file of its own, not an inline script: the site's CSP allows
// scripts from this origin only.
"use strict";

(() => {
  const root = document.getElementById("swagger-ui");
  if (!root || typeof SwaggerUIBundle === "undefined") return;
  window.ui = SwaggerUIBundle({
    url: root.dataset.openapiUrl,
    dom_id: "#swagger-ui",
    deepLinking: true,
    persistAuthorization: false,
    tryItOutEnabled: true,
    // Without this, the validator badge loads an image from an external validator service.
    validatorUrl: null,
    presets: [SwaggerUIBundle.presets.apis],
    layout: "BaseLayout",
  });
})();
