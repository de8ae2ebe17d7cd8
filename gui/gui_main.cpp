// stratasim-gui [SCENARIO.json] [--search] [--compare N]: evaluate (or search) a scenario's
// strategies in a window. --compare N selects the first N rows once the first job is done and
// opens the Compare page (for screenshots and demos).
#include <QtWidgets/QApplication>

#include "gui/main_window.h"

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  stratasim::MainWindow window;
  window.resize(1280, 800);
  QStringList args = QApplication::arguments();
  args.removeFirst();
  int compare = 0;
  bool search = false;
  QString scenario;
  for (int i = 0; i < args.size(); ++i) {
    if (args[i] == "--compare" && i + 1 < args.size()) {
      compare = args[++i].toInt();
    } else if (args[i] == "--search") {
      search = true;
    } else if (args[i].startsWith("--")) {
      qCritical("usage: stratasim-gui [SCENARIO.json] [--search] [--compare N]");
      return 2;
    } else {
      scenario = args[i];
    }
  }
  if (!scenario.isEmpty()) {
    bool first = true;
    QObject::connect(&window, &stratasim::MainWindow::evaluation_finished, &window,
                     [&](bool ok) {
                       if (!ok || !first) return;
                       first = false;
                       if (search) {
                         window.run_search();
                         first = true;
                         search = false;
                         return;
                       }
                       if (compare < 2) return;
                       std::vector<int> rows;
                       for (int r = 0; r < compare; ++r) rows.push_back(r);
                       window.select_rows(rows);
                       window.compare_selected();
                     });
    window.load_scenario(scenario);
  }
  window.show();
  return QApplication::exec();
}
