// The memory browser's only script: scroll a wide lineage graph so the item itself is in view.
document.addEventListener("DOMContentLoaded", function () {
  document.querySelectorAll(".graph").forEach(function (box) {
    var root = box.querySelector("a.root rect");
    if (!root) { return; }
    var x = parseFloat(root.getAttribute("x")), y = parseFloat(root.getAttribute("y"));
    box.scrollLeft = Math.max(0, x - box.clientWidth / 3);
    box.scrollTop = Math.max(0, y - box.clientHeight / 2);
  });
});
