// stratasim-gui [SCENARIO.json]: compare a scenario's strategy variants in a window.
#include <QtWidgets/QApplication>

#include "gui/main_window.h"

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  stratasim::MainWindow window;
  window.resize(1280, 800);
  const QStringList args = QApplication::arguments();
  if (args.size() > 1) window.load_scenario(args[1]);
  window.show();
  return QApplication::exec();
}
