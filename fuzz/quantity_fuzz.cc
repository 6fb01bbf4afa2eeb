// Fuzz target for model::Quantity::Parse (Kubernetes quantity syntax). Besides not crashing:
// an error quotes the input; a parsed quantity prints (ToString) as text that parses back to an
// equal value; printing is a fixed point from the second round on (not the first: like
// Kubernetes, BinarySI 62.5Ki prints as "64000", which reads back as DecimalSI and prints
// "64k"); the rounded readers and the checked arithmetic hold for every value Parse can return.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "model/quantity.h"

using tidepool::fuzz::Printable;
using tidepool::model::Quantity;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto q = Quantity::Parse(text);
  if (!q) {
    const std::string& message = q.error().message();
    FUZZ_EXPECT(message.find(text) != std::string::npos,
                "error does not quote the input \"" + Printable(text) + "\": " + message);
    return 0;
  }

  std::string printed = q->ToString();
  auto again = Quantity::Parse(printed);
  FUZZ_EXPECT(again.has_value(),
              "\"" + Printable(text) + "\" prints as \"" + printed +
                  "\", which does not parse: " + (again ? "" : again.error().message()));
  FUZZ_EXPECT(*again == *q, "\"" + Printable(text) + "\" prints as \"" + printed +
                                "\", which parses to a different value (" + again->ToString() +
                                ")");
  std::string reprinted = again->ToString();
  auto third = Quantity::Parse(reprinted);
  FUZZ_EXPECT(third && *third == *q && third->ToString() == reprinted,
              "\"" + Printable(text) + "\" prints as \"" + printed + "\", then as \"" + reprinted +
                  "\", then as \"" + (third ? third->ToString() : "(error)") + "\"");

  // Rounding away from zero: any non-zero amount is at least one milli-unit and one unit.
  int64_t milli = q->MilliValue();
  int64_t units = q->Value();
  FUZZ_EXPECT(
      (milli > 0) == (q->Sign() > 0) && (milli < 0) == (q->Sign() < 0),
      "\"" + Printable(text) + "\": MilliValue " + std::to_string(milli) + " has the wrong sign");
  FUZZ_EXPECT(
      (units > 0) == (q->Sign() > 0) && (units < 0) == (q->Sign() < 0),
      "\"" + Printable(text) + "\": Value " + std::to_string(units) + " has the wrong sign");

  // Arithmetic stays inside its checked bounds for anything Parse accepts.
  Quantity doubled = *q + *q;
  Quantity zero = *q - *q;
  FUZZ_EXPECT(zero.IsZero(), "\"" + Printable(text) + "\": q - q is " + zero.ToString());
  FUZZ_EXPECT(doubled - *q == *q, "\"" + Printable(text) + "\": (q + q) - q is not q");
  return 0;
}
