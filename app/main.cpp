// tessera: the executable (the command line is app/cli.cpp).
#include "app/app.hpp"

int main(int argc, char** argv) {
  return tessera::app::main(argc, argv);
}
