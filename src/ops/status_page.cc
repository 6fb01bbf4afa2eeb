#include "ops/status_page.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <map>

#include "autoscaler/buffers.h"

namespace tidepool::ops {
namespace {

using autoscaler::PoolStatus;
using autoscaler::RemovalStatus;
using autoscaler::Status;

constexpr std::string_view kStyle = R"css(
:root { --fg:#1f2328; --muted:#656d76; --line:#d0d7de; --bg:#f6f8fa; --card:#ffffff;
  --ok:#1a7f37; --ok-bg:#dafbe1; --warn:#9a6700; --warn-bg:#fff8c5; --bad:#cf222e;
  --bad-bg:#ffebe9; --info:#0969da; --info-bg:#ddf4ff; }
* { box-sizing: border-box; }
body { margin:0; font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,
  sans-serif; color:var(--fg); background:var(--bg); }
header { background:#24292f; color:#fff; padding:14px 28px; display:flex; align-items:baseline;
  gap:24px; flex-wrap:wrap; }
header h1 { margin:0; font-size:20px; font-weight:600; letter-spacing:.2px; }
header .meta { color:#c9d1d9; font-size:13px; }
header .meta b { color:#fff; font-weight:600; }
main { padding:20px 28px 40px; max-width:1500px; }
section { background:var(--card); border:1px solid var(--line); border-radius:8px;
  margin:0 0 18px; overflow-x:auto; }
section h2 { margin:0; padding:10px 16px; font-size:15px; font-weight:600; background:var(--bg);
  border-bottom:1px solid var(--line); }
section h2 .count { color:var(--muted); font-weight:400; margin-left:6px; }
section .empty { padding:12px 16px; color:var(--muted); }
table { border-collapse:collapse; width:100%; }
th, td { text-align:left; padding:7px 10px; border-bottom:1px solid #eaeef2;
  vertical-align:middle; }
#pending-table td, #kept-table td, #backoff-table td { vertical-align:top; }
th { font-size:11px; text-transform:uppercase; letter-spacing:.3px; color:var(--muted);
  font-weight:600; background:#fbfcfd; white-space:nowrap; }
tr:last-child td { border-bottom:none; }
td.num, th.num { text-align:right; font-variant-numeric:tabular-nums; }
td.name { font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace; font-size:13px;
  white-space:nowrap; }
td.state { min-width:170px; }
td.state .badge { margin:1px 0; }
td.narrow { width:1%; }
.cards { display:flex; gap:12px; flex-wrap:wrap; margin:0 0 18px; }
.card { background:var(--card); border:1px solid var(--line); border-radius:8px; padding:10px 16px;
  min-width:150px; }
.card .v { font-size:24px; font-weight:600; font-variant-numeric:tabular-nums; }
.card .k { color:var(--muted); font-size:12px; text-transform:uppercase; letter-spacing:.4px; }
.badge { display:inline-block; padding:1px 8px; border-radius:10px; font-size:12px;
  font-weight:600; white-space:nowrap; }
.ok { color:var(--ok); background:var(--ok-bg); }
.warn { color:var(--warn); background:var(--warn-bg); }
.bad { color:var(--bad); background:var(--bad-bg); }
.info { color:var(--info); background:var(--info-bg); }
.muted { color:var(--muted); }
.bar { display:flex; height:10px; width:120px; background:#eaeef2; border-radius:5px;
  overflow:hidden; margin-top:4px; }
.bar span { display:block; height:100%; }
.bar .r { background:#2da44e; } .bar .n { background:#a6d9b4; } .bar .u { background:#54aeff; }
.bar .d { background:#ff8182; }
.legend { font-size:12px; color:var(--muted); padding:8px 16px; border-top:1px solid #eaeef2; }
.legend i { display:inline-block; width:10px; height:10px; border-radius:2px; margin:0 4px 0 12px;
  vertical-align:-1px; }
.alert { border:1px solid #ff8182; background:var(--bad-bg); color:#82071e; border-radius:8px;
  padding:10px 16px; margin:0 0 18px; }
ul.reasons { margin:0; padding:0; list-style:none; }
ul.reasons li { margin:0 0 2px; }
ul.reasons .pool { font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;
  font-size:12px; color:var(--muted); margin-right:6px; }
.more { padding:8px 16px; color:var(--muted); font-style:italic; }
dl.decision { display:grid; grid-template-columns:max-content 1fr; gap:4px 16px; margin:0;
  padding:12px 16px; }
dl.decision dt { color:var(--muted); }
dl.decision dd { margin:0; }
footer { color:var(--muted); font-size:12px; padding:0 28px 24px; }
)css";

std::string Ago(Time now, Time then) {
  if (then > now) return "in " + FormatAge(then - now);
  return FormatAge(now - then) + " ago";
}

// "2026-01-02T03:04:05Z (3m ago)" with the exact time as a tooltip-free plain text.
std::string When(Time now, Time t) {
  return fmt::format("<span title=\"{}\">{}</span>", HtmlEscape(FormatRfc3339(t)),
                     HtmlEscape(Ago(now, t)));
}

void OpenSection(std::string& out, std::string_view id, std::string_view title, size_t count,
                 bool show_count = true) {
  out += fmt::format("<section id=\"{}\"><h2>{}", id, HtmlEscape(title));
  if (show_count) out += fmt::format("<span class=\"count\">({})</span>", count);
  out += "</h2>\n";
}

void More(std::string& out, size_t shown, size_t total) {
  if (total > shown)
    out += fmt::format("<div class=\"more\">... and {} more</div>\n", total - shown);
}

void Card(std::string& out, std::string_view key, std::string_view value) {
  out +=
      fmt::format("<div class=\"card\"><div class=\"v\">{}</div><div class=\"k\">{}</div></div>\n",
                  value, HtmlEscape(key));
}

void Header(std::string& out, const Status& s, const StatusPageExtras& x) {
  out += "<header><h1>tidepool</h1>";
  auto meta = [&](std::string_view k, std::string_view v) {
    out += fmt::format("<span class=\"meta\">{} <b>{}</b></span>", HtmlEscape(k), v);
  };
  if (!x.version.empty()) meta("version", HtmlEscape(x.version));
  if (!x.provider.empty()) meta("provider", HtmlEscape(x.provider));
  std::string who = x.identity.empty() ? "" : fmt::format(" ({})", HtmlEscape(x.identity));
  meta("role", fmt::format("{}{}", x.is_leader ? "leader" : "standby", who));
  if (!x.is_leader) meta("leader", x.leader.empty() ? "unknown" : HtmlEscape(x.leader));
  meta("last step", s.last_step ? When(x.now, *s.last_step) : "never");
  out += "</header>\n";
}

void Summary(std::string& out, const Status& s, const StatusPageExtras& x) {
  int ready = 0, registered = 0, upcoming = 0, backoff = 0;
  double cost = 0;
  std::map<std::string, int> removing;
  for (const RemovalStatus& r : s.removals) ++removing[r.pool];
  for (const PoolStatus& p : s.pools) {
    ready += p.ready;
    registered += p.registered;
    upcoming += p.upcoming;
    if (p.backoff_until) ++backoff;
    if (x.config != nullptr) {
      if (const model::Pool* pool = x.config->FindPool(p.name)) {
        int rm = removing.contains(p.name) ? removing[p.name] : 0;
        cost += std::max(p.target, p.registered + rm) * pool->price_per_hour;
      }
    }
  }
  out += "<div class=\"cards\">\n";
  Card(out, "pending pods", fmt::format("{}", s.pending_pods));
  if (s.gated_pods > 0) Card(out, "held by scheduling gates", fmt::format("{}", s.gated_pods));
  Card(out, "unschedulable", fmt::format("{}", s.unschedulable->size()));
  Card(out, "nodes ready", fmt::format("{} / {}", ready, registered));
  Card(out, "upcoming", fmt::format("{}", upcoming));
  Card(out, "being removed", fmt::format("{}", s.removals.size()));
  Card(out, "pools in backoff", fmt::format("{}", backoff));
  if (x.config != nullptr) Card(out, "est. cost / hour", fmt::format("{:.2f}", cost));
  out += "</div>\n";
  if (s.batch_open_since) {
    out += fmt::format(
        "<div class=\"alert\" style=\"border-color:#54aeff;background:#ddf4ff;color:#0a3069\">"
        "A scale-up batch is open (started {}): pods that just turned pending are collected "
        "before planning."
        "</div>\n",
        When(x.now, *s.batch_open_since));
  }
}

void PoolTableHead(std::string& out, bool cfg) {
  out += "<table id=\"pool-table\"><thead><tr><th>Pool</th><th>State</th>";
  if (cfg) out += "<th>Capacity</th><th>Instance type</th>";
  out +=
      "<th class=\"num\">Min</th><th class=\"num\">Max</th><th class=\"num\">Target</th>"
      "<th class=\"num\">Ready</th><th class=\"num\">Registered</th>"
      "<th class=\"num\">Upcoming</th><th class=\"num\">Removing</th>";
  if (cfg) out += "<th class=\"num\">Price/h</th>";
  out += "<th>Nodes</th></tr></thead>\n<tbody>\n";
}

// The State cell: stockout, backoff, scaling up, at max or ok.
void PoolStateCell(std::string& out, const PoolStatus& p, Time now) {
  out += "<td class=\"state\">";
  if (p.stockout) out += "<span class=\"badge bad\">stockout</span> ";
  if (p.backoff_until) {
    out += fmt::format(
        "<span class=\"badge warn\">backoff</span> <span class=\"muted\">ends {}"
        "</span>",
        When(now, *p.backoff_until));
  } else if (!p.stockout) {
    if (p.upcoming > 0) {
      out += "<span class=\"badge info\">scaling up</span>";
    } else if (p.target >= p.max && p.max > 0) {
      out += "<span class=\"badge warn\">at max</span>";
    } else {
      out += "<span class=\"badge ok\">ok</span>";
    }
  }
  if (p.deallocate) {
    out += fmt::format(" <span class=\"muted\" title=\"{}\">{} stopped of {}</span>",
                       HtmlEscape(p.stopped_reason), p.stopped, p.max_stopped);
  }
  out += "</td>";
}

// The Capacity and Instance type cells, from the config's pool (null: not in the config).
void PoolConfigCells(std::string& out, const model::Pool* pool) {
  if (pool != nullptr) {
    bool spot = pool->capacity_type == model::CapacityType::kSpot;
    out += fmt::format("<td><span class=\"badge {}\">{}</span></td><td class=\"name\">{}</td>",
                       spot ? "info" : "ok", model::CapacityTypeName(pool->capacity_type),
                       HtmlEscape(pool->instance_type.empty() ? "-" : pool->instance_type));
  } else {
    out += "<td class=\"muted\">-</td><td class=\"muted\">-</td>";
  }
}

// The Nodes bar. Its full width is the pool's max (or the current count when above max).
void PoolBar(std::string& out, const PoolStatus& p, int rm) {
  int not_ready = std::max(0, p.registered - p.ready);
  int scale = std::max({p.max, p.ready + not_ready + p.upcoming + rm, 1});
  auto pct = [&](int n) { return 100.0 * n / scale; };
  out += "<td><div class=\"bar\" role=\"img\" aria-label=\"";
  out += fmt::format("{} ready, {} not ready, {} upcoming, {} removing of max {}\">", p.ready,
                     not_ready, p.upcoming, rm, p.max);
  for (auto [cls, n] : {std::pair{"r", p.ready}, std::pair{"n", not_ready},
                        std::pair{"u", p.upcoming}, std::pair{"d", rm}}) {
    if (n > 0)
      out += fmt::format("<span class=\"{}\" style=\"width:{:.1f}%\"></span>", cls, pct(n));
  }
  out += "</div></td></tr>\n";
}

// One pool's row; `rm`: its nodes being removed.
void PoolRow(std::string& out, const PoolStatus& p, int rm, const StatusPageExtras& x) {
  bool cfg = x.config != nullptr;
  const model::Pool* pool = cfg ? x.config->FindPool(p.name) : nullptr;
  out += fmt::format("<tr><td class=\"name\">{}</td>", HtmlEscape(p.name));
  PoolStateCell(out, p, x.now);
  if (cfg) PoolConfigCells(out, pool);
  out += fmt::format(
      "<td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\"><b>{}</b></td>"
      "<td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>"
      "<td class=\"num\">{}</td>",
      p.min, p.max, p.target, p.ready, p.registered, p.upcoming, rm);
  if (cfg) {
    out += pool != nullptr ? fmt::format("<td class=\"num\">{:.3f}</td>", pool->price_per_hour)
                           : "<td class=\"num muted\">-</td>";
  }
  PoolBar(out, p, rm);
}

void Pools(std::string& out, const Status& s, const StatusPageExtras& x) {
  std::map<std::string, int> removing;
  for (const RemovalStatus& r : s.removals) ++removing[r.pool];
  OpenSection(out, "pools", "Pools", s.pools.size());
  if (s.pools.empty()) {
    out += "<div class=\"empty\">No pools yet (before the first loop step).</div></section>\n";
    return;
  }
  PoolTableHead(out, x.config != nullptr);
  for (const PoolStatus& p : s.pools) {
    int rm = removing.contains(p.name) ? removing[p.name] : 0;
    PoolRow(out, p, rm, x);
  }
  out += "</tbody></table>\n";
  // Warm capacity (pools[].warm): targets, prediction, spend and the last decision, one line each.
  for (const PoolStatus& p : s.pools) {
    if (!p.warm) continue;
    out += fmt::format("<div class=\"legend\"><b>{}</b> warm: {}</div>\n", HtmlEscape(p.name),
                       HtmlEscape(autoscaler::FormatWarm(p)));
  }
  out +=
      "<div class=\"legend\">Nodes bar, full width = max:<i style=\"background:#2da44e\"></i>"
      "ready<i style=\"background:#a6d9b4\"></i>not ready<i style=\"background:#54aeff\"></i>"
      "upcoming<i style=\"background:#ff8182\"></i>removing</div>\n";
  out += "</section>\n";
}

void Pending(std::string& out, const Status& s, const StatusPageExtras& x) {
  const std::vector<planner::Unschedulable>& unschedulable = *s.unschedulable;
  OpenSection(out, "pending", "Pending pods no scale-up helps", unschedulable.size());
  if (unschedulable.empty()) {
    out += fmt::format(
        "<div class=\"empty\">None. {} pending pod(s) in total{}{}.</div>\n", s.pending_pods,
        s.waiting_for_capacity.empty() ? std::string()
                                       : fmt::format(", {} waiting for existing or upcoming nodes",
                                                     s.waiting_for_capacity.size()),
        s.gated_pods == 0 ? std::string()
                          : fmt::format("; {} more held by scheduling gates, which no node helps "
                                        "until the gates are removed",
                                        s.gated_pods));
  } else {
    out +=
        "<table id=\"pending-table\"><thead><tr><th>Pod</th><th>Why, per pool</th></tr>"
        "</thead><tbody>\n";
    size_t n = std::min(unschedulable.size(), x.max_rows);
    for (size_t i = 0; i < n; ++i) {
      const planner::Unschedulable& u = unschedulable[i];
      out += fmt::format("<tr><td class=\"name narrow\">{}</td><td><ul class=\"reasons\">",
                         HtmlEscape(u.pod));
      if (u.reasons.empty()) out += "<li class=\"muted\">no pool can take it</li>";
      for (const auto& [pool, reason] : u.reasons) {
        out += fmt::format("<li><span class=\"pool\">{}</span>{}</li>", HtmlEscape(pool),
                           HtmlEscape(reason.text));
      }
      out += "</ul></td></tr>\n";
    }
    out += "</tbody></table>\n";
    More(out, n, unschedulable.size());
  }
  if (!s.waiting_for_capacity.empty()) {
    size_t n = std::min(s.waiting_for_capacity.size(), x.max_rows);
    out +=
        "<div class=\"legend\" style=\"margin:0;padding:8px 16px\">Waiting for existing or "
        "upcoming nodes: ";
    for (size_t i = 0; i < n; ++i) {
      out += fmt::format("{}<span class=\"name\">{}</span>", i ? ", " : "",
                         HtmlEscape(s.waiting_for_capacity[i]));
    }
    if (s.waiting_for_capacity.size() > n) {
      out += fmt::format(" ... and {} more", s.waiting_for_capacity.size() - n);
    }
    out += "</div>\n";
  }
  out += "</section>\n";
}

// CapacityBuffers served (docs/capacity-buffers.md): each one only when there are any.
void Buffers(std::string& out, const Status& s, const StatusPageExtras& x) {
  if (s.buffers.empty()) return;
  OpenSection(out, "buffers", "Capacity buffers", s.buffers.size());
  out +=
      "<table id=\"buffer-table\"><thead><tr><th>Buffer</th><th>Pod</th>"
      "<th class=\"num\">Replicas</th><th>ReadyForProvisioning</th><th>Provisioning</th>"
      "</tr></thead><tbody>\n";
  size_t n = std::min(s.buffers.size(), x.max_rows);
  for (size_t i = 0; i < n; ++i) {
    const autoscaler::BufferStatusLine& b = s.buffers[i];
    out += fmt::format(
        "<tr><td class=\"name narrow\">{}</td><td class=\"name\">{}</td><td class=\"num\">{}"
        "</td><td>{}</td><td>{}</td></tr>\n",
        HtmlEscape(autoscaler::ShownBuffer(b.buffer)), HtmlEscape(b.source),
        b.replicas ? fmt::format("{}", *b.replicas) : std::string("-"), HtmlEscape(b.ready),
        HtmlEscape(b.provisioning));
  }
  out += "</tbody></table>\n";
  More(out, n, s.buffers.size());
  out += "</section>\n";
}

void Removals(std::string& out, const Status& s, const StatusPageExtras& x) {
  OpenSection(out, "removals", "Nodes being removed", s.removals.size());
  if (s.removals.empty()) {
    out += "<div class=\"empty\">None.</div></section>\n";
    return;
  }
  out +=
      "<table id=\"removal-table\"><thead><tr><th>Node</th><th>Pool</th><th>Phase</th>"
      "<th>Started</th><th class=\"num\">Pods left</th></tr></thead><tbody>\n";
  size_t n = std::min(s.removals.size(), x.max_rows);
  for (size_t i = 0; i < n; ++i) {
    const RemovalStatus& r = s.removals[i];
    std::string_view cls = r.phase == "deleting" ? "bad" : r.phase == "draining" ? "warn" : "info";
    out += fmt::format(
        "<tr><td class=\"name\">{}</td><td class=\"name\">{}</td><td><span class=\"badge {}\">"
        "{}</span></td><td>{}</td><td class=\"num\">{}</td></tr>\n",
        HtmlEscape(r.node), HtmlEscape(r.pool.empty() ? "-" : r.pool), cls, HtmlEscape(r.phase),
        When(x.now, r.started), r.pods_left);
  }
  out += "</tbody></table>\n";
  More(out, n, s.removals.size());
  out += "</section>\n";
}

void Unneeded(std::string& out, const Status& s, const StatusPageExtras& x) {
  OpenSection(out, "unneeded", "Unneeded nodes", s.unneeded.size());
  if (s.unneeded.empty()) {
    out += "<div class=\"empty\">None.</div></section>\n";
    return;
  }
  Duration wait = x.config != nullptr ? x.config->scale_down.unneeded_time : Duration{};
  out += "<table id=\"unneeded-table\"><thead><tr><th>Node</th><th>Unneeded since</th>";
  if (x.config != nullptr) out += "<th>Removal possible</th>";
  out += "</tr></thead><tbody>\n";
  size_t n = std::min(s.unneeded.size(), x.max_rows);
  for (size_t i = 0; i < n; ++i) {
    const autoscaler::UnneededNode& u = s.unneeded[i];
    out += fmt::format("<tr><td class=\"name\">{}</td><td>{}</td>", HtmlEscape(u.node),
                       When(x.now, u.since));
    if (x.config != nullptr) {
      Time at = u.since + wait;
      if (u.waiting) at = std::max(at, u.waiting->at);
      out += at <= x.now ? "<td><span class=\"badge warn\">now</span>" : "<td>" + When(x.now, at);
      if (u.waiting) {
        out += fmt::format(" (after the checkpoint of pod {})", HtmlEscape(u.waiting->pod));
      }
      out += "</td>";
    }
    out += "</tr>\n";
  }
  out += "</tbody></table>\n";
  More(out, n, s.unneeded.size());
  out += "</section>\n";
}

void Kept(std::string& out, const Status& s, const StatusPageExtras& x) {
  const std::vector<planner::Keep>& kept = *s.kept;
  OpenSection(out, "kept", "Nodes kept at the last scale-down pass", kept.size());
  if (kept.empty()) {
    out += "<div class=\"empty\">None.</div></section>\n";
    return;
  }
  out +=
      "<table id=\"kept-table\"><thead><tr><th>Node</th><th>Why it stays</th></tr></thead>"
      "<tbody>\n";
  size_t n = std::min(kept.size(), x.max_rows);
  for (size_t i = 0; i < n; ++i) {
    out += fmt::format("<tr><td class=\"name narrow\">{}</td><td>{}</td></tr>\n",
                       HtmlEscape(kept[i].node), HtmlEscape(kept[i].Reason()));
  }
  out += "</tbody></table>\n";
  More(out, n, kept.size());
  out += "</section>\n";
}

void Decisions(std::string& out, const Status& s, const StatusPageExtras& x) {
  OpenSection(out, "decisions", "Last decisions", 0, /*show_count=*/false);
  if (!s.last_scale_up && !s.last_scale_down) {
    out += "<div class=\"empty\">No scale-up or scale-down yet.</div></section>\n";
    return;
  }
  out += "<dl class=\"decision\">\n";
  if (s.last_scale_up) {
    const autoscaler::ScaleUpRecord& u = *s.last_scale_up;
    std::string pods;
    size_t n = std::min<size_t>(u.pods.size(), 10);
    for (size_t i = 0; i < n; ++i) pods += (i ? ", " : "") + HtmlEscape(u.pods[i]);
    if (u.pods.size() > n) pods += fmt::format(" ... and {} more", u.pods.size() - n);
    out += fmt::format(
        "<dt>Last scale-up</dt><dd><span class=\"badge info\">+{}</span> pool <span "
        "class=\"name\"><b>{}</b></span> {} &rarr; {}, {}</dd>\n"
        "<dt></dt><dd>{}</dd>\n<dt></dt><dd class=\"muted\">for {}</dd>\n",
        u.to - u.from, HtmlEscape(u.pool), u.from, u.to, When(x.now, u.time), HtmlEscape(u.reason),
        pods.empty() ? "no pods" : pods);
  }
  if (s.last_scale_down) {
    const autoscaler::ScaleDownRecord& d = *s.last_scale_down;
    std::string_view cls = d.outcome == "failed" ? "bad" : d.outcome == "deleted" ? "ok" : "warn";
    out += fmt::format(
        "<dt>Last scale-down</dt><dd><span class=\"badge {}\">{}</span> node <span "
        "class=\"name\"><b>{}</b></span> (pool {}), {}</dd>\n<dt></dt><dd>{}</dd>\n",
        cls, HtmlEscape(d.outcome), HtmlEscape(d.node), HtmlEscape(d.pool.empty() ? "-" : d.pool),
        When(x.now, d.time), HtmlEscape(d.reason));
  }
  out += "</dl></section>\n";
}

void Backoffs(std::string& out, const Status& s, const StatusPageExtras& x) {
  size_t count = std::count_if(s.pools.begin(), s.pools.end(),
                               [](const PoolStatus& p) { return p.backoff_until || p.stockout; });
  OpenSection(out, "backoffs", "Backoffs and stockouts", count);
  if (count == 0) {
    out += "<div class=\"empty\">No pool is in backoff.</div></section>\n";
    return;
  }
  out +=
      "<table id=\"backoff-table\"><thead><tr><th>Pool</th><th>State</th><th>Until</th>"
      "<th>Reason</th></tr></thead><tbody>\n";
  for (const PoolStatus& p : s.pools) {
    if (!p.backoff_until && !p.stockout) continue;
    out += fmt::format("<tr><td class=\"name\">{}</td><td>{}{}</td><td>{}</td><td>{}</td></tr>\n",
                       HtmlEscape(p.name),
                       p.backoff_until ? "<span class=\"badge warn\">backoff</span> " : "",
                       p.stockout ? "<span class=\"badge bad\">stockout</span>" : "",
                       p.backoff_until ? When(x.now, *p.backoff_until) : "-",
                       HtmlEscape(p.backoff_reason.empty() ? "-" : p.backoff_reason));
  }
  out += "</tbody></table></section>\n";
}

}  // namespace

std::string FormatAge(Duration d) {
  if (d < Duration::zero()) return "in " + FormatAge(-d);
  int64_t s = std::chrono::duration_cast<std::chrono::seconds>(d).count();
  if (s < 60) return fmt::format("{}s", s);
  if (s < 3600) return fmt::format("{}m{:02}s", s / 60, s % 60);
  if (s < 86400) return fmt::format("{}h{:02}m", s / 3600, s % 3600 / 60);
  return fmt::format("{}d{:02}h", s / 86400, s % 86400 / 3600);
}

std::string RenderStatusPage(const Status& s, const StatusPageExtras& x) {
  std::string out;
  out.reserve(16 * 1024);
  out +=
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      "<meta http-equiv=\"refresh\" content=\"30\">\n"
      "<title>tidepool status</title>\n<style>";
  out += kStyle;
  out += "</style></head>\n<body>\n";
  Header(out, s, x);
  out += "<main>\n";
  if (!x.last_error.empty()) {
    out += fmt::format(
        "<div class=\"alert\" id=\"last-error\"><b>Last error</b>{}: {}</div>\n",
        x.last_error_time ? fmt::format(" ({})", When(x.now, *x.last_error_time)) : std::string(),
        HtmlEscape(x.last_error));
  }
  Summary(out, s, x);
  Pools(out, s, x);
  Pending(out, s, x);
  Buffers(out, s, x);
  Removals(out, s, x);
  Unneeded(out, s, x);
  Decisions(out, s, x);
  Backoffs(out, s, x);
  Kept(out, s, x);
  out += "</main>\n";
  out += fmt::format(
      "<footer>Rendered {} by tidepool{}. This page refreshes every 30 s; the same "
      "numbers are on /metrics.</footer>\n",
      HtmlEscape(FormatRfc3339(x.now)),
      x.version.empty() ? std::string() : fmt::format(" {}", HtmlEscape(x.version)));
  out += "</body></html>\n";
  return out;
}

}  // namespace tidepool::ops
