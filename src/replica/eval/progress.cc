// The quiet Progress.
#include "replica/eval/progress.h"

namespace replica::eval {

Progress& no_progress() {
  static Progress quiet;
  return quiet;
}

}  // namespace replica::eval
