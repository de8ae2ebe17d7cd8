// Editing a scenario in the window (form and JSON, validated on Apply) and the exports: the
// table as CSV, the scenario as JSON, the visible chart (or the whole comparison) as PNG.
#include <doctest/doctest.h>

#include <QtGui/QImage>
#include <QtWidgets/QComboBox>
#include <QtWidgets/QLineEdit>
#include <QtWidgets/QPlainTextEdit>
#include <QtWidgets/QSpinBox>
#include <QtWidgets/QTableView>
#include <fstream>
#include <sstream>

#include "gui/compare_view.h"
#include "gui/export.h"
#include "gui/scenario_editor.h"
#include "gui/variant_table_model.h"
#include "sim/core/error.h"
#include "tests/gui/gui_test_support.h"

namespace stratasim {
namespace {

using testing::kLlama;
using testing::run_job;
using testing::scenario_path;
using testing::temp_path;

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST_CASE("editor: the form writes into the scenario, Apply re-evaluates the edited scenario") {
  MainWindow w;
  const std::string tiny = scenario_path("tiny_2gpu_1layer.json");
  REQUIRE(run_job(w, [&] { return w.load_scenario(QString::fromStdString(tiny)); }));
  ScenarioEditor* e = w.editor();
  CHECK(e->devices()->value() == 2);
  CHECK(e->layers()->value() == 1);
  e->devices()->setValue(4);
  e->degree("global_batch")->setValue(16);
  e->layers()->setValue(2);
  e->search_axes()->setText(R"({"tp": [1, 2]})");
  emit e->search_axes()->editingFinished();
  const Json doc = e->document();
  CHECK(doc["cluster"]["devices"] == 4);
  CHECK(doc["strategy"]["global_batch"] == 16);
  CHECK(doc["model"]["layers"] == 2);
  // The scenario writes its model out (no preset): the form keeps it, whatever preset comes
  // first in the list (it replaced it with the first preset once).
  CHECK(e->findChild<QComboBox*>() != nullptr);
  CHECK(doc["model"]["name"] == "gpt-1layer");
  CHECK(doc["model"]["hidden"] == 1024);
  CHECK(doc["search"]["tp"] == Json::array({1, 2}));
  REQUIRE(run_job(w, [&] {
    emit e->applied();
    return true;
  }));
  CHECK(w.scenario().hardware.num_devices == 4);
  CHECK(w.scenario().model.transformer.layers == 2);
  CHECK(w.scenario().search.size() == 2);
  // data parallel (tp 1) on 4 devices: dp 4.
  bool found = false;
  for (int r = 0; r < w.table()->model()->rowCount(); ++r) {
    if (w.table()->model()->index(r, VariantTableModel::kVariant).data() == "data parallel") {
      CHECK(w.table()->model()->index(r, VariantTableModel::kDp).data().toInt() == 4);
      found = true;
    }
  }
  CHECK(found);
}

TEST_CASE("editor: invalid JSON and unknown keys are shown with the reader's message") {
  ScenarioEditor e;
  e.set_document(load_json_file(scenario_path("tiny_2gpu_1layer.json")), "tiny.json");
  e.text()->setPlainText(R"({"name": "x", "model": "gpt3-175b", "clustr": {}})");
  CHECK_THROWS_WITH_AS(e.scenario(), doctest::Contains("tiny.json: clustr: \"clustr\" is an unknown key"),
                       InputError);
  e.text()->setPlainText("{\"name\": ");
  CHECK_THROWS_WITH_AS(e.scenario(), doctest::Contains("malformed JSON"), InputError);

  MainWindow w;
  REQUIRE(run_job(w, [&] { return w.load_scenario(QString::fromStdString(scenario_path("tiny_2gpu_1layer.json"))); }));
  w.editor()->text()->setPlainText(R"({"name": "x", "model": "gpt3-175b", "cluster": "dgx_a100", "strategy": {"tpp": 3}})");
  emit w.editor()->applied();
  CHECK_FALSE(w.busy());  // nothing started: the error is shown in the editor
  CHECK(w.editor()->error_text().contains("strategy.tpp: \"tpp\" is an unknown key"));
  CHECK(w.scenario().name == "tiny: 1-layer GPT on 2 GPUs");
}

TEST_CASE("export: table as CSV, scenario as JSON, chart and comparison as PNG") {
  MainWindow w;
  w.resize(1280, 800);
  REQUIRE(run_job(w, [&] { return w.load_scenario(QString::fromStdString(scenario_path(kLlama))); }));
  const std::string csv = temp_path("table.csv");
  w.export_table_csv(QString::fromStdString(csv));
  const std::string text = slurp(csv);
  CHECK(text.rfind("variant,tp,pp,dp,cp,ep,schedule,mb,v,stages,recompute,zero,sp,type,overlap,iteration,tokens/s,MFU,peak memory,fits\n", 0) == 0);
  CHECK(std::count(text.begin(), text.end(), '\n') == 1 + 9);  // header + base + 8 variants
  const QString first = w.table()->model()->index(0, 0).data().toString();
  CHECK(text.find("\n" + first.toStdString() + ",") != std::string::npos);
  CHECK(table_csv(*w.table()->model()) == text);

  const std::string json = temp_path("scenario.json");
  w.save_scenario(QString::fromStdString(json));
  CHECK(load_scenario(json).strategy == load_scenario(scenario_path(kLlama)).strategy);

  const std::string png = temp_path("chart.png");
  w.export_chart_png(QString::fromStdString(png));
  CHECK_FALSE(QImage(QString::fromStdString(png)).isNull());
  w.select_rows({0, 1});
  REQUIRE(w.compare_selected());
  w.export_chart_png(QString::fromStdString(png));
  const QImage compared(QString::fromStdString(png));
  CHECK(compared.size() == w.compare_view()->size());

  CHECK_THROWS_WITH_AS(save_json(Json::object(), "/nonexistent/dir/x.json"),
                       doctest::Contains("/nonexistent/dir/x.json"), InputError);
}

TEST_CASE("export: CSV fields with commas and quotes are quoted") {
  VariantTableModel m;
  Strategy s;
  m.set_rows({VariantResult{"a, \"b\"", s, nullptr, {}, "why"}});
  const std::string csv = table_csv(m);
  CHECK(csv.find("\n\"a, \"\"b\"\"\",") != std::string::npos);
}

}  // namespace
}  // namespace stratasim
