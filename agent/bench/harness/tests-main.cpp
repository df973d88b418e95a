// Written by the goalbox grader for one grade in place of the exercise's test/tests-main.cpp, which is put back
// before the next one.
//
// Catch's own main would print a summary a solution can print too. This one takes the grade's nonce from the
// grade's private folder ($GOALBOX_DIR) and removes the file, runs Catch's session, sends each test case's result
// to the grade's collector through descriptor 3 as Catch reports it (a listener), and only after the session has
// returned writes the report, then the end line with the nonce, and closes the descriptor: static destructors and
// exit handlers run after main returns, when the pipe is already closed.
#define CATCH_CONFIG_RUNNER
#include "catch.hpp"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include <unistd.h>

namespace {

std::string goalbox_report;

void goalbox_emit(std::string line) {
    for (char& c : line) {
        if (c == '\n') {
            c = ' ';
        }
    }
    line += '\n';
    char const* p = line.data();
    std::size_t left = line.size();
    while (left > 0) {
        ssize_t n = ::write(3, p, left);
        if (n <= 0) {
            return;  // no collector: not a grade
        }
        p += n;
        left -= static_cast<std::size_t>(n);
    }
}

struct GoalboxListener : Catch::TestEventListenerBase {
    using TestEventListenerBase::TestEventListenerBase;
    void testCaseEnded(Catch::TestCaseStats const& stats) override {
        std::string const line = (stats.totals.assertions.failed == 0 ? "pass\t" : "fail\t") + stats.testInfo.name;
        goalbox_report += line + "\n";
        goalbox_emit(line);
    }
};

}  // namespace

CATCH_REGISTER_LISTENER(GoalboxListener)

int main(int argc, char* argv[]) {
    char const* env = std::getenv("GOALBOX_DIR");
    std::string const dir = env ? env : "";
    std::string nonce;
    bool have = false;
    {
        std::ifstream in(dir + "/nonce");
        if (in) {
            std::stringstream s;
            s << in.rdbuf();
            nonce = s.str();
            have = true;
        }
    }
    std::remove((dir + "/nonce").c_str());
    int result = Catch::Session().run(argc, argv);
    if (have) {
        {
            std::ofstream out(dir + "/report.txt");
            out << goalbox_report;
        }
        goalbox_emit("end\t" + nonce);
    }
    ::close(3);
    return result;
}
