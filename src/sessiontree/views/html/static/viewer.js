// sessiontree's web viewer: the little it needs a script for. No framework, no CDN.
// Everything inserted here is HTML the server rendered (transcript text escaped there).
"use strict";

function loadMore(link) {
  link.addEventListener("click", async (event) => {
    event.preventDefault();
    link.textContent = "loading…";
    const response = await fetch(link.dataset.fragment, { credentials: "same-origin" });
    if (!response.ok) { link.textContent = "could not load more (" + response.status + ")"; return; }
    const holder = document.createElement("template");
    holder.innerHTML = await response.text();
    link.replaceWith(holder.content);
    document.querySelectorAll("a.more[data-fragment]:not([data-bound])").forEach(bind);
  });
}

function bind(link) { link.dataset.bound = "1"; loadMore(link); }

function follow(main) {
  const conversation = document.getElementById("conversation");
  const status = document.getElementById("live-status");
  const source = new EventSource(main.dataset.liveSrc);
  source.addEventListener("records", (event) => {
    const holder = document.createElement("template");
    holder.innerHTML = JSON.parse(event.data).html;
    holder.content.querySelectorAll(".item").forEach((item) => item.classList.add("new"));
    conversation.append(holder.content);
    if (status) { status.textContent = "updated " + new Date().toLocaleTimeString(); }
    window.scrollTo(0, document.body.scrollHeight);
  });
  source.addEventListener("reload", () => { source.close(); window.location.reload(); });
  source.onerror = () => { if (status) { status.textContent = "reconnecting…"; } };
}

async function drawTree(pane) {
  const response = await fetch(pane.dataset.treeSrc, { credentials: "same-origin" });
  const holder = document.createElement("template");
  holder.innerHTML = response.ok ? await response.text() : "<p>the tree could not be drawn</p>";
  pane.replaceChildren(holder.content);
  showActive(pane);
}

// The tree pane scrolled (itself, not the page) to the node shown: the record a link
// selected, else the active path's leaf (rows follow the file: often far down).
function showActive(pane) {
  const nodes = pane.querySelectorAll("svg.tree .node.on");
  const target = pane.querySelector("svg.tree .node.selected") || nodes[nodes.length - 1];
  if (!target) { return; }
  const view = pane.getBoundingClientRect();
  // The part of the pane in the window (its foot may be below it until the page scrolls);
  // room below the last row, so the active leaf (often the last) can reach that part.
  const hidden = Math.max(0, view.bottom - window.innerHeight);
  pane.style.paddingBottom = hidden + "px";
  const seen = pane.clientHeight - hidden;
  const box = target.getBoundingClientRect();
  pane.scrollTop += box.top - view.top - seen / 2;
  pane.scrollLeft += box.left - view.left - 40;
}

function toggleThinking(box) {
  box.addEventListener("change", () => {
    document.querySelectorAll("details.thinking").forEach((d) => { d.open = box.checked; });
  });
}

// The tree pane folded away (the conversation then takes the whole width) and back.
function treeToggle(button) {
  const pane = document.getElementById("tree-pane");
  const layout = pane && pane.closest(".layout");
  if (!layout) { return; }
  button.hidden = false;
  button.addEventListener("click", () => {
    const folded = layout.classList.toggle("tree-folded");
    button.textContent = folded ? "show the tree" : "hide the tree";
    button.setAttribute("aria-expanded", String(!folded));
  });
}

document.addEventListener("DOMContentLoaded", () => {
  document.querySelectorAll("a.more[data-fragment]").forEach(bind);
  const main = document.querySelector("main[data-live-src]");
  if (main) { follow(main); }
  document.querySelectorAll("[data-tree-src]").forEach(drawTree);
  document.querySelectorAll(".tree-pane:not([data-tree-src])").forEach(showActive);
  const toggle = document.getElementById("tree-toggle");
  if (toggle) { treeToggle(toggle); }
  const box = document.getElementById("show-thinking");
  if (box) { toggleThinking(box); }
});
