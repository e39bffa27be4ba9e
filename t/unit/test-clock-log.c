/* SPDX-License-Identifier: ISC */
/* test-clock-log.c: libqwen's clocks and levelled logging. */
#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <regex.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"
#include "tap.h"

static char tmpdir[] = "/tmp/test-clock-log.XXXXXX";
static char capture[96];	/* stderr is redirected here */
static char got[8192];

static void
test_clock(void)
{
	uint64_t a, b, ns0, ms, ns1, wall, deadline, rem, start;
	struct timespec t0, t1;
	int i, backwards = 0;

	a = clock_mono_ns();
	for (i = 0; i < 100000; i++) {
		b = clock_mono_ns();
		backwards += b < a;
		a = b;
	}
	is_int(backwards, 0, "clock_mono_ns never goes backwards");
	ns0 = clock_mono_ns();
	ms = clock_mono_ms();
	ns1 = clock_mono_ns();
	ok(ms >= ns0 / 1000000 && ms <= ns1 / 1000000,
	    "clock_mono_ms is clock_mono_ns in milliseconds");
	clock_gettime(CLOCK_REALTIME, &t0);
	wall = clock_wall_ns();
	clock_gettime(CLOCK_REALTIME, &t1);
	ok(wall >= (uint64_t)t0.tv_sec * 1000000000 + (uint64_t)t0.tv_nsec &&
	    wall <= (uint64_t)t1.tv_sec * 1000000000 + (uint64_t)t1.tv_nsec,
	    "clock_wall_ns is unix time in nanoseconds");
	ms = clock_wall_ms();
	ok(ms >= wall / 1000000 && ms - wall / 1000000 < 2000,
	    "clock_wall_ms is clock_wall_ns in milliseconds");

	is_int(clock_remaining_ms(0), 0, "deadline 0 has passed");
	is_int(clock_remaining_ms(clock_mono_ms() - 5), 0,
	    "a past deadline leaves 0");
	rem = clock_remaining_ms(clock_mono_ms() + 1000);
	ok(rem > 500 && rem <= 1000, "a deadline 1 s away leaves ~1000 ms (%llu)",
	    (unsigned long long)rem);
	ok(clock_remaining_ms(UINT64_MAX) > UINT64_MAX / 2,
	    "a far deadline does not wrap");

	/* Wait (polling, bounded) for a 30 ms deadline to pass. */
	start = clock_mono_ms();
	deadline = start + 30;
	while (clock_remaining_ms(deadline) > 0 && clock_mono_ms() < start + 5000)
		nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
	ok(clock_remaining_ms(deadline) == 0 && clock_mono_ms() >= start + 30,
	    "remaining reaches 0 exactly when 30 ms have passed");
}

/* ISO 8601 times as upstream writes them, read back to epoch ms. */
static void
test_iso_parse(void)
{
	char out[CLOCK_ISO_LEN];

	clock_iso_time(1785596473619ULL, out);
	is_int(clock_iso_parse(out), 1785596473619LL, "clock_iso_time read back");
	is_int(clock_iso_parse("1970-01-01T00:00:01Z"), 1000, "no fraction");
	is_int(clock_iso_parse("1970-01-01T00:00:01.6Z"), 1600, "a short fraction");
	is_int(clock_iso_parse("1970-01-01T00:00:01.678912Z"), 1678,
	    "a long fraction: its milliseconds");
	is_int(clock_iso_parse("1970-01-01T00:00:01.5"), 1500, "no Z: UTC");
	is_int(clock_iso_parse("1970-01-01T00:00:01.Z"), -1, "a dot without digits");
	is_int(clock_iso_parse("1970-01-01T00:00:01Zjunk"), -1, "bytes after");
	is_int(clock_iso_parse("1970-01-01"), -1, "a date alone");
	is_int(clock_iso_parse("yesterday"), -1, "not a time");
	is_int(clock_iso_parse(NULL), -1, "none");
}

/* Read and empty the capture file (stderr is O_APPEND on it). */
static const char *
take(const char *path)
{
	int fd = open(path, O_RDWR);
	ssize_t n = fd == -1 ? -1 : read(fd, got, sizeof(got) - 1);

	got[n > 0 ? n : 0] = '\0';
	if (fd != -1) {
		if (ftruncate(fd, 0) == -1)
			diag("ftruncate %s: %s", path, strerror(errno));
		close(fd);
	}
	return got;
}

/* Whether s matches the extended regular expression re. */
static int
matches(const char *s, const char *re)
{
	regex_t r;
	int rc;

	if (regcomp(&r, re, REG_EXTENDED | REG_NOSUB) != 0)
		return 0;
	rc = regexec(&r, s, 0, NULL, 0) == 0;
	regfree(&r);
	return rc;
}

static void
test_levels(void)
{
	static const char *names[] = { "error", "warn", "notice", "info",
	    "debug" };
	size_t i;
	int bad = 0;

	for (i = 0; i < 5; i++) {
		bad += log_level_parse(names[i]) != (int)(LOG_LEVEL_ERR + i);
		bad += strcmp(log_level_name(LOG_LEVEL_ERR + i), names[i]) != 0;
	}
	is_int(bad, 0, "the five level names parse and print back");
	is_int(log_level_parse("verbose"), -1, "unknown name is -1");
	is_int(log_level_parse("INFO"), -1, "names are lowercase");
	is_int(log_level_parse(""), -1, "empty name is -1");
	is_int(log_level_parse(NULL), -1, "NULL name is -1");
	is_str(log_level_name(99), "log", "unknown level prints as \"log\"");
}

/* Lines in plain format, filtering, errno handling. */
static void
test_plain(void)
{
	char re[256], big[3000];
	const char *s;

	unsetenv("JOURNAL_STREAM");
	log_init("tprog", LOG_LEVEL_INFO);
	ok(!log_is_journal(), "no JOURNAL_STREAM: plain format");
	is_int(log_get_level(), LOG_LEVEL_INFO, "log_init sets the level");
	take(capture);
	log_info("hello %d", 42);
	log_debug("hidden");
	snprintf(re, sizeof(re), "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:"
	    "[0-9]{2}\\.[0-9]{3}Z tprog\\[%ld\\] info: hello 42\n$",
	    (long)getpid());
	s = take(capture);
	ok(matches(s, re), "plain line: TIME PROG[PID] LEVEL: message");
	if (!matches(s, re))
		diag("got: %s", s);

	log_set_level(LOG_LEVEL_DEBUG);
	log_debug("shown");
	ok(strstr(take(capture), "debug: shown\n") != NULL,
	    "debug kept at level debug");
	log_set_level(LOG_LEVEL_ERR);
	log_warnx("dropped");
	log_info("dropped");
	log_errx("kept %s", "too");
	s = take(capture);
	ok(strstr(s, "dropped") == NULL && strstr(s, "error: kept too\n") != NULL,
	    "level error keeps only errors");
	log_set_level(LOG_LEVEL_INFO);

	errno = ENOENT;
	log_warn("open %s", "x.jsonl");
	is_int(errno, ENOENT, "log_warn keeps errno");
	ok(strstr(take(capture), "warn: open x.jsonl: No such file or "
	    "directory\n") != NULL, "log_warn appends strerror(errno)");
	errno = EAGAIN;
	log_info("x");
	is_int(errno, EAGAIN, "log_info keeps errno");
	take(capture);

	log_msg(LOG_LEVEL_NOTICE, "a\nforged line\r");
	s = take(capture);
	ok(strstr(s, "notice: a?forged line?\n") != NULL && strchr(s, '\n') ==
	    s + strlen(s) - 1, "control characters cannot split a line");

	memset(big, 'z', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	log_info("%s", big);
	s = take(capture);
	ok(strlen(s) == 2047 && s[2046] == '\n',
	    "a long message is cut to one 2047-byte line (%zu)", strlen(s));
	log_init(big, LOG_LEVEL_INFO);
	log_info("after a long progname");
	s = take(capture);
	ok(strlen(s) < 200 && strstr(s, "] info: after a long progname\n"),
	    "a 3000-byte progname is cut and the message kept (%zu)", strlen(s));
	log_init("tprog", LOG_LEVEL_INFO);
}

/* JOURNAL_STREAM naming stderr switches to "<N>" prefixes. */
static void
test_journal(void)
{
	struct stat st;
	char js[64];

	if (fstat(STDERR_FILENO, &st) == -1) {
		ok(0, "fstat stderr");
		return;
	}
	snprintf(js, sizeof(js), "%llu:%llu", (unsigned long long)st.st_dev,
	    (unsigned long long)st.st_ino);
	setenv("JOURNAL_STREAM", js, 1);
	log_init("tprog", LOG_LEVEL_INFO);
	ok(log_is_journal(), "JOURNAL_STREAM matching stderr: journal format");
	take(capture);
	log_warnx("careful %d", 1);
	log_errx("broken");
	log_info("fine");
	is_str(take(capture), "<4>careful 1\n<3>broken\n<6>fine\n",
	    "journal lines: priority prefix, no timestamp");

	snprintf(js, sizeof(js), "%llu:%llu", (unsigned long long)st.st_dev,
	    (unsigned long long)st.st_ino + 1);
	setenv("JOURNAL_STREAM", js, 1);
	log_init("tprog", LOG_LEVEL_INFO);
	ok(!log_is_journal(), "JOURNAL_STREAM naming another inode: plain");
	setenv("JOURNAL_STREAM", "garbage", 1);
	log_init("tprog", LOG_LEVEL_INFO);
	ok(!log_is_journal(), "malformed JOURNAL_STREAM: plain");
	log_info("plain again");
	ok(matches(take(capture), "^[0-9-]+T[0-9:.]+Z tprog\\[[0-9]+\\] info: "
	    "plain again\n$"), "plain line after JOURNAL_STREAM mismatch");
}

/* log_open_file, rotation with log_reopen, and back to stderr. */
static void
test_file(void)
{
	char path[128], old[160], js[64];
	struct stat st;
	int rc;

	snprintf(path, sizeof(path), "%s/daemon.log", tmpdir);
	snprintf(old, sizeof(old), "%s.1", path);
	fstat(STDERR_FILENO, &st);
	snprintf(js, sizeof(js), "%llu:%llu", (unsigned long long)st.st_dev,
	    (unsigned long long)st.st_ino);
	setenv("JOURNAL_STREAM", js, 1);
	log_init("tprog", LOG_LEVEL_INFO);
	take(capture);

	is_int(log_open_file(path), 0, "log_open_file");
	ok(!log_is_journal(), "a log file is never journal format");
	ok(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600,
	    "the log file is 0600");
	log_info("one");
	ok(rename(path, old) == 0, "rotate the file away");
	log_info("two");
	is_int(log_reopen(), 0, "log_reopen");
	log_info("three");
	ok(strstr(take(old), "info: one\n") != NULL && strstr(got, "info: two\n"),
	    "lines before reopen are in the rotated file");
	ok(strstr(take(path), "info: three\n") != NULL && !strstr(got, "two"),
	    "lines after reopen are in the new file");
	is_str(take(capture), "", "nothing went to stderr");

	errno = 0;
	rc = log_open_file("/nonexistent/dir/x.log");
	ok(rc == -1 && errno == ENOENT, "a bad path fails with ENOENT");
	log_info("four");
	ok(strstr(take(path), "info: four\n") != NULL,
	    "the old file is kept after a failed open");

	is_int(log_open_file("/dev/full"), 0, "log to /dev/full");
	errno = EAGAIN;
	log_info("lost");
	is_int(errno, EAGAIN, "a failed log write keeps errno");
	is_int(log_open_file(path), 0, "back to the file");

	is_int(log_open_file(NULL), 0, "log_open_file(NULL) goes back to stderr");
	ok(log_is_journal(), "journal format is back with stderr");
	is_int(log_reopen(), 0, "log_reopen without a file is a no-op");
	log_info("five");
	is_str(take(capture), "<6>five\n", "lines go to stderr again");
	ok(strstr(take(path), "five") == NULL, "and not to the file");
}

int
main(void)
{
	int fd, saved;
	char cmd[64];

	if (mkdtemp(tmpdir) == NULL) {
		perror("mkdtemp");
		return 1;
	}
	test_clock();
	test_iso_parse();
	test_levels();
	snprintf(capture, sizeof(capture), "%s/stderr", tmpdir);
	fd = open(capture, O_WRONLY | O_APPEND | O_CREAT, 0600);
	saved = dup(STDERR_FILENO);
	if (fd == -1 || saved == -1 || dup2(fd, STDERR_FILENO) == -1) {
		perror("redirect stderr");
		return 1;
	}
	close(fd);
	test_plain();
	test_journal();
	test_file();
	dup2(saved, STDERR_FILENO);
	close(saved);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	if (system(cmd) != 0)
		diag("could not remove %s", tmpdir);
	return done_testing();
}
