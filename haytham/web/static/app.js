// haytham serve and haytham report: show every time in the reader's local time, and keep a
// served page current while its session changes. No inline script on a served page (their
// Content-Security-Policy allows only this file); the report holds this file inline, allowed
// by its hash. Each <time datetime="ISO"> the server wrote in UTC to the second is rewritten
// to local time to the second with its offset ("2026-11-28 17:13:37 UTC+01:00"), its title
// keeping the ISO value. A page with data-live polls its session's version every two seconds;
// when the files changed it reloads, unless the person has started typing into a form, in
// which case it only says so (their text stays).
(function () {
  "use strict";
  function two(n) { return (n < 10 ? "0" : "") + n; }
  function local(date) {
    var offset = -date.getTimezoneOffset();
    var zone = "UTC";
    if (offset !== 0) {
      var size = Math.abs(offset);
      zone += (offset > 0 ? "+" : "-") + two(Math.floor(size / 60)) + ":" + two(size % 60);
    }
    return date.getFullYear() + "-" + two(date.getMonth() + 1) + "-" + two(date.getDate()) + " " +
      two(date.getHours()) + ":" + two(date.getMinutes()) + ":" + two(date.getSeconds()) + " " + zone;
  }
  var times = document.querySelectorAll("time[datetime]");
  for (var i = 0; i < times.length; i++) {
    var when = new Date(times[i].getAttribute("datetime"));
    if (!isNaN(when.getTime())) {
      times[i].textContent = local(when);
      times[i].setAttribute("title", times[i].getAttribute("datetime"));
    }
  }
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
