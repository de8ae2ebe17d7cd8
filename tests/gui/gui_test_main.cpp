// doctest main for the GUI tests: one QApplication for the whole run, on the offscreen
// platform unless the environment names another (ctest sets QT_QPA_PLATFORM=offscreen).
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <QtWidgets/QApplication>

int main(int argc, char** argv) {
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);
  doctest::Context context(argc, argv);
  return context.run();
}
