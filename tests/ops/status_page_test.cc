#include "ops/status_page.h"

#include <gtest/gtest.h>

#include <regex>

#include "tests/ops/sample_status.h"

namespace tidepool::ops {
namespace {

int Count(const std::string& text, const std::string& needle) {
  int n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

TEST(StatusPageTest, IsSelfContainedHtml) {
  auto config = testing::SampleConfig();
  std::string html = RenderStatusPage(testing::SampleStatus(), testing::SampleExtras(&config));
  EXPECT_TRUE(html.starts_with("<!DOCTYPE html>"));
  EXPECT_NE(html.find("</html>"), std::string::npos);
  EXPECT_NE(html.find("<style>"), std::string::npos);
  // No external assets, no scripts.
  for (const char* forbidden :
       {"<script", "<link", "src=", "http://", "https://", "@import", "url("}) {
    EXPECT_EQ(html.find(forbidden), std::string::npos) << forbidden;
  }
  // Balanced structure for the elements the page opens.
  for (const char* tag : {"section", "table", "tr", "td", "ul", "li", "div", "dl"}) {
    EXPECT_EQ(Count(html, std::string("<") + tag + ">") + Count(html, std::string("<") + tag + " "),
              Count(html, std::string("</") + tag + ">"))
        << tag;
  }
}

TEST(StatusPageTest, ShowsPoolsPendingRemovalsDecisionsAndBackoffs) {
  auto config = testing::SampleConfig();
  std::string html = RenderStatusPage(testing::SampleStatus(), testing::SampleExtras(&config));
  EXPECT_NE(html.find("id=\"pool-table\""), std::string::npos);
  // One row per pool, with min/max/target/ready/registered/upcoming/removing in that order.
  std::regex row(
      "<td class=\"name\">gpu-light-spot</td>.*?<td class=\"num\">0</td><td class=\"num\">16</td>"
      "<td class=\"num\"><b>5</b></td><td class=\"num\">2</td><td class=\"num\">3</td>"
      "<td class=\"num\">3</td><td class=\"num\">0</td>");
  EXPECT_TRUE(std::regex_search(html, row));
  EXPECT_NE(html.find("Standard_NC24ads_A100_v4"), std::string::npos);
  EXPECT_NE(html.find(">spot<"), std::string::npos);
  EXPECT_NE(html.find(">on-demand<"), std::string::npos);
  // Pending pods with a reason per pool.
  EXPECT_NE(html.find("ml/llama-pretrain-worker-3"), std::string::npos);
  EXPECT_NE(html.find("pool gpu-heavy at max 8"), std::string::npos);
  EXPECT_NE(html.find("ml/bert-finetune-4"), std::string::npos);
  // Removal, unneeded, kept, decisions, backoff, error, leader, version.
  EXPECT_NE(html.find("aks-cpu-12345678-vmss000003"), std::string::npos);
  EXPECT_NE(html.find(">draining<"), std::string::npos);
  EXPECT_NE(html.find("aks-cpu-12345678-vmss000002"), std::string::npos);
  EXPECT_NE(html.find("16m05s ago"), std::string::npos);  // unneeded since 11:44:00
  // Ripe since 11:55, but waits for a checkpoint at 12:03:00.
  EXPECT_NE(html.find("in 2m55s</span> (after the checkpoint of pod ml/bert-finetune-7)"),
            std::string::npos);
  EXPECT_NE(html.find("a running training pod"), std::string::npos);
  EXPECT_NE(html.find("+3</span> pool"), std::string::npos);
  EXPECT_NE(html.find("aks-cpu-12345678-vmss000004"), std::string::npos);
  EXPECT_NE(html.find("SkuNotAvailable"), std::string::npos);
  EXPECT_NE(html.find("in 7m25s"), std::string::npos);  // backoff ends 12:07:30
  EXPECT_NE(html.find("409 Conflict"), std::string::npos);
  EXPECT_NE(html.find("tidepool-6d5f7c9b8-x2k4q"), std::string::npos);
  EXPECT_NE(html.find("0.1.0"), std::string::npos);
  // Estimated cost: cpu 6 x 0.192 (+1 removing, max(6, 6+1)=7) + light 5 x 0.27 + heavy 8 x 3.67.
  EXPECT_NE(html.find(">32.05<"), std::string::npos) << "7*0.192 + 5*0.27 + 8*3.67 = 32.054";
}

TEST(StatusPageTest, EscapesEverythingFromTheCluster) {
  auto config = testing::SampleConfig();
  std::string html = RenderStatusPage(testing::SampleStatus(), testing::SampleExtras(&config));
  EXPECT_EQ(html.find("<script>alert"), std::string::npos);
  EXPECT_NE(html.find("research/&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;"),
            std::string::npos);
  EXPECT_NE(html.find("didn&#39;t match Pod&#39;s node affinity"), std::string::npos);
  EXPECT_EQ(HtmlEscape("a<b>&\"'"), "a&lt;b&gt;&amp;&quot;&#39;");
}

TEST(StatusPageTest, EmptyStatusBeforeTheFirstStep) {
  StatusPageExtras x;
  x.is_leader = false;
  x.identity = "replica-b";
  std::string html = RenderStatusPage(autoscaler::Status{}, x);
  EXPECT_NE(html.find("No pools yet"), std::string::npos);
  EXPECT_NE(html.find("standby (replica-b)"), std::string::npos);
  EXPECT_NE(html.find("leader <b>unknown</b>"), std::string::npos);
  EXPECT_NE(html.find("last step <b>never</b>"), std::string::npos);
  EXPECT_EQ(html.find("id=\"last-error\""), std::string::npos);
}

TEST(StatusPageTest, PodsHeldByGatesAreCountedApart) {
  autoscaler::Status s;
  s.pending_pods = 2;
  StatusPageExtras x;
  std::string before = RenderStatusPage(s, x);
  EXPECT_EQ(before.find("held by scheduling gates"), std::string::npos);
  s.gated_pods = 5;
  std::string html = RenderStatusPage(s, x);
  EXPECT_TRUE(std::regex_search(
      html, std::regex("<div class=\"v\">5</div><div class=\"k\">held by scheduling gates</div>")));
  EXPECT_NE(html.find("None. 2 pending pod(s) in total; 5 more held by scheduling gates"),
            std::string::npos);
  std::string text = autoscaler::FormatStatus(s);
  EXPECT_NE(text.find("pending pods: 2\nheld by scheduling gates: 5 "), std::string::npos) << text;
}

TEST(StatusPageTest, LongListsAreCut) {
  autoscaler::Status s;
  StatusPageExtras x;
  x.max_rows = 3;
  auto pods = std::make_shared<std::vector<planner::Unschedulable>>();
  for (int i = 0; i < 10; ++i) pods->push_back({"ns/p" + std::to_string(i), {}});
  s.unschedulable = std::move(pods);
  std::string html = RenderStatusPage(s, x);
  EXPECT_NE(html.find("ns/p2"), std::string::npos);
  EXPECT_EQ(html.find("ns/p3"), std::string::npos);
  EXPECT_NE(html.find("... and 7 more"), std::string::npos);
}

TEST(StatusPageTest, FormatAge) {
  using namespace std::chrono_literals;
  EXPECT_EQ(FormatAge(0s), "0s");
  EXPECT_EQ(FormatAge(59s), "59s");
  EXPECT_EQ(FormatAge(192s), "3m12s");
  EXPECT_EQ(FormatAge(2h + 5min + 30s), "2h05m");
  EXPECT_EQ(FormatAge(76h), "3d04h");
  EXPECT_EQ(FormatAge(-90s), "in 1m30s");
}

}  // namespace
}  // namespace tidepool::ops
