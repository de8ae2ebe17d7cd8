// The main window loads a scenario in its worker thread, lists one row per variant sorted by
// throughput, and charts the selected variant.
#include <doctest/doctest.h>

#include <map>
#include <string>

#include <QtCharts/QAreaSeries>
#include <QtCharts/QChartView>
#include <QtCore/QEventLoop>
#include <QtCore/QTimer>
#include <QtWidgets/QTableView>

#include "gui/main_window.h"
#include "gui/strategy_filter.h"
#include "gui/variant_table_model.h"
#include "tests/gui/gui_test_support.h"

namespace stratasim {
namespace {

using testing::kLlama;
using testing::scenario_path;

// Runs the event loop until the window reports its evaluation (or 60 s pass).
bool wait_for_evaluation(MainWindow& w, const QString& path) {
  bool ok = false, done = false;
  QEventLoop loop;
  QObject::connect(&w, &MainWindow::evaluation_finished, &loop, [&](bool result) {
    ok = result;
    done = true;
    loop.quit();
  });
  QTimer::singleShot(60000, &loop, &QEventLoop::quit);
  REQUIRE(w.load_scenario(path));
  loop.exec();
  REQUIRE(done);
  return ok;
}

TEST_CASE("main window: one row per variant, the highest throughput on top, its charts shown") {
  const Scenario sc = load_scenario(scenario_path(kLlama));
  const std::vector<VariantResult> expected = evaluate_variants_with_timelines(sc);
  const VariantResult* fastest = &expected.front();
  for (const VariantResult& v : expected) {
    if (v.feasible() && v.prediction.tokens_per_s > fastest->prediction.tokens_per_s) fastest = &v;
  }

  MainWindow w;
  w.resize(1200, 800);
  REQUIRE(wait_for_evaluation(w, QString::fromStdString(scenario_path(kLlama))));
  QAbstractItemModel* table = w.table()->model();
  CHECK(table->rowCount() == int(sc.variants.size()));
  CHECK(table->rowCount() == 9);  // base + 8 variants in the file
  CHECK(table->index(0, 0).data().toString().toStdString() == fastest->name);
  CHECK(w.selected_variant().toStdString() == fastest->name);
  // The iteration cell's tooltip says how sure the prediction is (validate/intervals.h).
  const QString tip = table->index(0, VariantTableModel::kIteration).data(Qt::ToolTipRole).toString();
  CHECK(tip.startsWith("80% interval "));
  CHECK(tip.contains("H100 development cases"));
  // The timeline tab shows the selected variant: forward bars on each of its pp ranks.
  int forward_series = 0;
  for (QAbstractSeries* s : w.chart_view(0)->chart()->series()) {
    if (s->name() == "forward") ++forward_series;
  }
  CHECK(forward_series == fastest->plan->pp);

  // Sorting by another column reorders the view, not the data.
  w.table()->sortByColumn(0, Qt::AscendingOrder);
  CHECK(table->index(0, 0).data().toString() == "1f1b");
  CHECK(table->rowCount() == 9);
}

// Variant -> its "stages" cell in the strategies table.
std::map<std::string, std::string> stages_by_variant(MainWindow& w) {
  QAbstractItemModel* table = w.table()->model();
  std::map<std::string, std::string> stages;
  for (int r = 0; r < table->rowCount(); ++r) {
    stages[table->index(r, 0).data().toString().toStdString()] =
        table->index(r, VariantTableModel::kStages).data().toString().toStdString();
  }
  return stages;
}

TEST_CASE("main window: a mixed cluster's variants show how their layers split over the stages") {
  MainWindow w;
  w.resize(1200, 800);
  REQUIRE(wait_for_evaluation(w, QString::fromStdString(scenario_path("llama3_70b_mixed_a100_h100.json"))));
  QAbstractItemModel* table = w.table()->model();
  std::map<std::string, std::string> stages = stages_by_variant(w);
  CHECK(stages["base"] == "balanced");  // "auto" as lowered on a mixed cluster
  CHECK(stages["even split (10 layers per stage)"] == "even");
  CHECK(stages["hand split 7/7/7/7/13/13/13/13"] == "7/7/7/7/13/13/13/13");
  CHECK(table->headerData(VariantTableModel::kStages, Qt::Horizontal).toString() == "stages");
}

TEST_CASE("main window: an operator graph's pipeline variants show how its ops split over the stages") {
  MainWindow w;
  w.resize(1200, 800);
  REQUIRE(wait_for_evaluation(w, QString::fromStdString(scenario_path("gpipe_amoebanet_8_p40.json"))));
  std::map<std::string, std::string> stages = stages_by_variant(w);
  CHECK(stages["base"] == "balanced");  // "auto" as lowered for an operator graph
  CHECK(stages["even op counts"] == "even");
  CHECK(stages["torchgpipe's balance"] == "45/98/100/150/145/200/195/153");
  CHECK(w.table()->model()->rowCount() == 8);
}

TEST_CASE("main window: PipeDream's VGG-16 shows its layouts and marks the fastest that fits") {
  MainWindow w;
  w.resize(1200, 800);
  REQUIRE(wait_for_evaluation(w, QString::fromStdString(scenario_path("pipedream_vgg16_16_v100.json"))));
  std::map<std::string, std::string> stages = stages_by_variant(w);
  CHECK(stages["convolutions | classifier, 8 replicas each"] == "31/8");
  CHECK(stages["base"] == "balanced");
  CHECK(w.table()->model()->rowCount() == 6);  // the base and its 5 variants
}

TEST_CASE("main window: loading returns at once, the result arrives through the event loop") {
  // The evaluation runs in a worker thread and reports through a queued signal, so nothing
  // has been reported when load_scenario() returns, however fast the evaluation was.
  MainWindow w;
  bool reported = false;
  QObject::connect(&w, &MainWindow::evaluation_finished, [&](bool) { reported = true; });
  REQUIRE(w.load_scenario(QString::fromStdString(scenario_path(kLlama))));
  CHECK_FALSE(reported);
  QEventLoop loop;
  QObject::connect(&w, &MainWindow::evaluation_finished, &loop, &QEventLoop::quit);
  QTimer::singleShot(60000, &loop, &QEventLoop::quit);
  if (!reported) loop.exec();
  CHECK(reported);
  CHECK(w.table()->model()->rowCount() == 9);  // the base and its 8 variants
}

TEST_CASE("main window: a missing scenario reports an error and keeps the window usable") {
  MainWindow w;
  CHECK_FALSE(wait_for_evaluation(w, "/nonexistent/scenario.json"));
  CHECK(w.table()->model()->rowCount() == 0);
  CHECK_FALSE(w.busy());
  CHECK(wait_for_evaluation(w, QString::fromStdString(scenario_path(kLlama))));
}

}  // namespace
}  // namespace stratasim

namespace stratasim {
namespace {

TEST_CASE("main window: simulate runs `stratasim simulate` as a child and adds its row") {
  qputenv("STRATASIM_EXECUTABLE", STRATASIM_BINARY);
  MainWindow w;
  const QString tiny = QString::fromStdString(testing::scenario_path("tiny_2gpu_1layer.json"));
  REQUIRE(testing::run_job(w, [&] { return w.load_scenario(tiny); }));
  const int analytical = w.table()->model()->rowCount();
  int row = -1;
  for (int r = 0; r < analytical; ++r) {
    if (w.table()->model()->index(r, 0).data() == "data parallel") row = r;
  }
  REQUIRE(row >= 0);
  w.select_row(row);
  const bool ok = testing::run_job(w, [&] { return w.run_simulate(); });
  INFO(w.status().toStdString());
  qunsetenv("STRATASIM_EXECUTABLE");
  if (!ok && w.status().contains("built without SimGrid")) return;  // a build without SimGrid
  REQUIRE(ok);
  CHECK(w.table()->model()->rowCount() == analytical + 1);
  const std::vector<VariantResult>& rows = w.last_job().rows;
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].name == "data parallel (simgrid)");
  CHECK(rows[0].prediction.engine == "simgrid");
  CHECK(rows[0].plan->dp == 2);  // tp 1 on 2 devices
  CHECK_FALSE(rows[0].prediction.timeline.empty());
}

TEST_CASE("main window: a child that cannot start is reported, the window stays usable") {
  qputenv("STRATASIM_EXECUTABLE", "/nonexistent/stratasim");
  MainWindow w;
  const QString tiny = QString::fromStdString(testing::scenario_path("tiny_2gpu_1layer.json"));
  REQUIRE(testing::run_job(w, [&] { return w.load_scenario(tiny); }));
  CHECK_FALSE(testing::run_job(w, [&] { return w.run_simulate(); }));
  qunsetenv("STRATASIM_EXECUTABLE");
  CHECK(w.status().contains("the stratasim executable was not found"));
  CHECK_FALSE(w.busy());
  CHECK(w.table()->model()->rowCount() == 3);
}

TEST_CASE("main window: the cp column and filter show the context-parallel variant") {
  // llama2_70b_512_h100 has one variant with cp = 2 (tp 8, pp 4: 512 / 64 = dp 8, not 16).
  MainWindow w;
  REQUIRE(wait_for_evaluation(w, QString::fromStdString(scenario_path(kLlama))));
  StrategyFilter* f = w.filter();
  f->set_degree(VariantTableModel::kCp, 2);
  REQUIRE(f->rowCount() == 1);
  CHECK(f->index(0, VariantTableModel::kVariant).data().toString() == "context parallel cp=2");
  CHECK(f->index(0, VariantTableModel::kCp).data().toInt() == 2);
  CHECK(f->index(0, VariantTableModel::kDp).data().toInt() == 8);
  f->clear_filters();
  CHECK(f->rowCount() == 9);  // the base and its 8 variants
}

TEST_CASE("main window: the ep column and filter pick the expert-parallel degree") {
  // qwen3_235b_256_h100: ep 32 in the base and three variants, 16 and 8 in one each.
  MainWindow w;
  REQUIRE(wait_for_evaluation(w, QString::fromStdString(scenario_path("qwen3_235b_256_h100.json"))));
  StrategyFilter* f = w.filter();
  REQUIRE(f->rowCount() == 6);
  f->set_degree(VariantTableModel::kEp, 16);
  REQUIRE(f->rowCount() == 1);
  CHECK(f->index(0, VariantTableModel::kVariant).data().toString() == "ep 16");
  CHECK(f->index(0, VariantTableModel::kEp).data().toInt() == 16);
  f->set_degree(VariantTableModel::kEp, 32);
  CHECK(f->rowCount() == 4);
  f->clear_filters();
  CHECK(f->rowCount() == 6);
}

}  // namespace
}  // namespace stratasim
