// haytham serve: keep a page current while its session changes (no inline script anywhere:
// the pages' Content-Security-Policy allows only this file). A page with data-live polls its
// session's version every two seconds; when the files changed it reloads, unless the person
// has started typing into a form, in which case it only says so (their text stays).
(function () {
  "use strict";
  var body = document.body;
  // a form's "Saved: ..." note is for the page the form led to, not for a later reload
  if (window.location.search.indexOf("said=") >= 0 && window.history.replaceState) {
    var params = new URLSearchParams(window.location.search);
    params.delete("said");
    params.delete("sig");
    var rest = params.toString();
    window.history.replaceState(null, "", window.location.pathname + (rest ? "?" + rest : ""));
  }
  var url = body.getAttribute("data-live");
  if (!url) return;
  var version = body.getAttribute("data-version");
  var typing = false;
  document.addEventListener("input", function () { typing = true; });
  function note() {
    if (document.getElementById("live-note")) return;
    var div = document.createElement("div");
    div.id = "live-note";
    div.className = "live-note";
    div.textContent = "This session changed on disk: reload to see it.";
    body.appendChild(div);
  }
  function poll() {
    fetch(url, { credentials: "same-origin", cache: "no-store" })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (data) {
        if (data && data.version && data.version !== version) {
          if (typing) { note(); } else { window.location.reload(); return; }
        }
        window.setTimeout(poll, 2000);
      })
      .catch(function () { window.setTimeout(poll, 5000); });
  }
  window.setTimeout(poll, 2000);
})();
