// The report as one self-contained HTML page: inline CSS and SVG, no script, no font or image fetched.
#pragma once
#include <string>

#include "replica/report/report.h"

namespace replica::report {

// Sections (each an id): #runs (what each run is: source, steps, data fingerprint), #comparison (bitwise and curve
// distance against the baseline), #eval-table (the runs side by side at the evaluation steps), #charts, #config.
std::string render_html(const Report& report);

// The pages' shared stylesheet (the contents of a <style> element): the reproduction page looks like the report.
const char* page_style();

}  // namespace replica::report
