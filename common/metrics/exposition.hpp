// Prometheus text exposition (version 0.0.4): families with HELP and TYPE,
// label values escaped, samples grouped by family in insertion order.
// NaN and infinities are written as Prometheus spells them.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace onramp {

using Labels = std::vector<std::pair<std::string, std::string>>;

class Exposition {
public:
	// Declare a family (type: gauge, counter, untyped). Re-declaring is a
	// no-op; samples of an undeclared family are dropped (and counted).
	void family(const std::string &name, const std::string &type, const std::string &help);
	void sample(const std::string &name, const Labels &labels, double value);
	// "what could not be read": exposed as onramp_metrics_read_errors
	// {source} and kept for the caller to log.
	void read_error(const std::string &source, const std::string &what);
	const std::vector<std::string> &errors() const { return errors_; }
	// Labels put on this collection's read-error samples (e.g. the node).
	void set_error_labels(const Labels &l) { labels_ = l; }

	// Merge another exposition's text (a node's textfile): families keep
	// their first HELP/TYPE; a sample of a family without TYPE is a read
	// error of origin.
	void merge_text(const std::string &text, const std::string &origin);

	std::string text() const;

private:
	struct Family {
		std::string type, help;
		std::vector<std::pair<Labels, double>> samples;
		std::vector<std::string> raw; // merged sample lines, as written
	};
	std::vector<std::string> order_;
	std::map<std::string, Family> fams_;
	std::map<std::string, int> read_errors_;
	std::vector<std::string> errors_;
	Labels labels_;
};

// Escape a label value (backslash, double quote, newline).
std::string escape_label(const std::string &v);
// A value as Prometheus writes it ("NaN", "+Inf", "-Inf", shortest round trip).
std::string format_value(double v);

} // namespace onramp
