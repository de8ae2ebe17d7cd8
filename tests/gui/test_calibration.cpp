// The calibration tab reads `stratasim validate --json` reports (sections optional) and charts
// predicted against measured per kernel and per schedule; calibrate/validate run as child
// processes whose stderr is shown and which Cancel kills.
#include <doctest/doctest.h>

#include <QtCharts/QBarSeries>
#include <QtCharts/QBarSet>
#include <QtCharts/QChartView>
#include <QtCharts/QScatterSeries>
#include <QtCharts/QBarCategoryAxis>
#include <QtCore/QFile>
#include <QtTest/QSignalSpy>
#include <QtTest/QTest>
#include <memory>

#include "gui/calibration_tab.h"
#include "sim/core/error.h"
#include "tests/gui/gui_test_support.h"

namespace stratasim {
namespace {

std::string fixture(const char* name) {
  return std::string(STRATASIM_SOURCE_DIR) + "/tests/gui/data/" + name;
}

TEST_CASE("calibration report: kernels, runtime and MAPE as written, the error computed when absent") {
  const CalibrationReport r = load_calibration_report(fixture("validation_report.json"));
  CHECK(r.hardware == "test-cpu");
  REQUIRE(r.kernels.size() == 4);
  CHECK(r.kernels[0].label() == "gemm/fused 512x512x512");
  CHECK(r.kernels[1].error == -0.20);
  // softmax has no "error": (0.0020 - 0.0025) / 0.0025 = -0.2; its shape is an object.
  CHECK(r.kernels[2].error == doctest::Approx(-0.2));
  CHECK(r.kernels[2].shape == R"({"rows":4096,"cols":1024})");
  REQUIRE(r.runtime.size() == 3);
  CHECK(r.runtime[1].label() == "interleaved p4 m8 v2");
  CHECK(r.runtime[0].measured_bubble.value() == 0.30);
  CHECK_FALSE(r.runtime[2].predicted_bubble.has_value());
  CHECK(r.mape_kernels.value() == 0.125);
  REQUIRE(r.machine_check.size() == 2);
  CHECK(r.machine_check[0].family == "copy");
  CHECK(r.machine_check[1].error == 0.0);  // computed: (0.0034 - 0.0034) / 0.0034
  CHECK(machine_check_summary(r) == "machine check: copy -23%, vector +0%");

  const CalibrationReport k = load_calibration_report(fixture("validation_kernels_only.json"));
  CHECK(k.kernels.size() == 1);
  CHECK(k.runtime.empty());
  CHECK_FALSE(k.mape_runtime.has_value());
  CHECK(k.kernels[0].error == doctest::Approx(-0.5));  // (0.001 - 0.002) / 0.002
  CHECK(k.machine_check.empty());
  CHECK(machine_check_summary(k).empty());

  // The DAG executor's graphs (validate --runtime, through the scenario path) join the runtime bars.
  const CalibrationReport d = read_calibration_report(
      parse_json_text(R"({"kind": "kernel_validation", "dag": [{"graph": "resnet", "threads": 2, "nodes": 6,
                          "predicted_s": 0.009, "measured_s": 0.010}], "mape": {"dag": 0.1}})",
                      "d.json"),
      "d.json");
  REQUIRE(d.runtime.size() == 1);
  CHECK(d.runtime[0].dag);
  CHECK(d.runtime[0].label() == "dag resnet, 2 threads");
  CHECK(d.runtime[0].error == doctest::Approx(-0.1));  // (0.009 - 0.010) / 0.010
  CHECK(d.mape_dag.value() == 0.1);
}

TEST_CASE("calibration report: another kind of file and a missing field are named") {
  CHECK_THROWS_WITH_AS(read_calibration_report(parse_json_text(R"({"kind": "search"})", "r.json"), "r.json"),
                       doctest::Contains("r.json: kind: \"search\" is not a validation report"),
                       InputError);
  CHECK_THROWS_WITH_AS(
      read_calibration_report(
          parse_json_text(R"({"kernels": [{"family": "gemm", "predicted_s": 1}]})", "r.json"),
          "r.json"),
      doctest::Contains("r.json: kernels[0]"), InputError);
}

TEST_CASE("calibration tab: the report's charts hold one point per kernel and two bars per schedule") {
  CalibrationTab tab;
  REQUIRE(tab.load_report(QString::fromStdString(fixture("validation_report.json"))));
  CHECK(tab.status() ==
        "test-cpu: 4 kernels, 3 schedules, kernel MAPE 12.5%, runtime MAPE 11.7%; "
        "machine check: copy -23%, vector +0%");
  QScatterSeries* kernels = nullptr;
  for (QAbstractSeries* s : tab.kernel_view()->chart()->series()) {
    if (s->name() == "kernels") kernels = qobject_cast<QScatterSeries*>(s);
  }
  REQUIRE(kernels != nullptr);
  REQUIRE(kernels->count() == 4);
  CHECK(kernels->at(0).x() == doctest::Approx(10.0));  // measured 10 ms
  CHECK(kernels->at(0).y() == doctest::Approx(11.0));  // predicted 11 ms
  QBarSeries* bars = nullptr;
  for (QAbstractSeries* s : tab.runtime_view()->chart()->series()) {
    if (auto* b = qobject_cast<QBarSeries*>(s)) bars = b;
  }
  REQUIRE(bars != nullptr);
  REQUIRE(bars->barSets().size() == 2);
  CHECK(bars->barSets()[0]->label() == "predicted");
  CHECK(bars->barSets()[0]->at(0) == doctest::Approx(500.0));
  CHECK(bars->barSets()[1]->at(1) == doctest::Approx(500.0));
  auto* axis = qobject_cast<QBarCategoryAxis*>(tab.runtime_view()->chart()->axes(Qt::Horizontal).front());
  REQUIRE(axis != nullptr);
  CHECK(axis->categories()[0] == "1f1b p4 m8\n+25.0%");

  CHECK_FALSE(tab.load_report("/nonexistent/report.json"));
  CHECK(tab.status().startsWith("error: "));
  CHECK(tab.report().kernels.size() == 4);  // the last good report stays
}

// A stand-in for `stratasim`: prints progress on stderr; `calibrate` then sleeps (to be
// cancelled) or writes a hardware file; `validate` copies the fixture to --json.
std::string fake_stratasim(bool slow) {
  const std::string path = testing::temp_path(slow ? "fake_slow.sh" : "fake_fast.sh");
  std::string script = "#!/bin/sh\necho \"measuring $1 ...\" >&2\n";
  script += slow ? "exec sleep 30\n" : "";
  script += "if [ \"$1\" = calibrate ]; then echo '{}' > \"$3\"; fi\n"
            "if [ \"$1\" = validate ]; then cp '" + fixture("validation_report.json") + "' \"$5\"; fi\n"
            "echo \"done $1\" >&2\n";
  QFile f(QString::fromStdString(path));
  REQUIRE(f.open(QIODevice::WriteOnly));
  f.write(script.c_str());
  f.close();
  f.setPermissions(QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner);
  return path;
}

TEST_CASE("calibration tab: calibrate then validate as child processes, Cancel kills the child") {
  qputenv("STRATASIM_EXECUTABLE", QByteArray::fromStdString(fake_stratasim(false)));
  {
    CalibrationTab tab;
    QSignalSpy done(&tab, &CalibrationTab::finished);
    tab.calibrate();
    REQUIRE(done.wait(10000));
    CHECK(done.takeFirst().at(0).toBool());
    CHECK(tab.log().contains("measuring calibrate ..."));
    CHECK(tab.log().contains("done validate"));
    CHECK(tab.report().kernels.size() == 4);
  }
  qputenv("STRATASIM_EXECUTABLE", QByteArray::fromStdString(fake_stratasim(true)));
  CalibrationTab tab;
  QSignalSpy done(&tab, &CalibrationTab::finished);
  tab.calibrate();
  REQUIRE(tab.busy());
  QTest::qWait(300);
  CHECK(tab.log().contains("measuring calibrate ..."));  // stderr shown while it runs
  QElapsedTimer clock;
  clock.start();
  tab.cancel();
  REQUIRE(done.wait(5000));
  CHECK(clock.elapsed() < 2000);
  CHECK_FALSE(done.takeFirst().at(0).toBool());
  CHECK_FALSE(tab.busy());
  CHECK(tab.status() == "calibrate cancelled");
  qunsetenv("STRATASIM_EXECUTABLE");
}

TEST_CASE("calibration tab: a missing executable is reported") {
  qputenv("STRATASIM_EXECUTABLE", "/nonexistent/stratasim");
  CalibrationTab tab;
  QSignalSpy done(&tab, &CalibrationTab::finished);
  tab.validate();
  REQUIRE((done.count() > 0 || done.wait(5000)));
  CHECK(tab.status().contains("the stratasim executable was not found"));
  qunsetenv("STRATASIM_EXECUTABLE");
}

}  // namespace
}  // namespace stratasim
