/* SPDX-License-Identifier: ISC */
/*
 * replay.c: a libFuzzer harness without libFuzzer: each file named (or
 * each file of each directory named) is one input, handed to
 * LLVMFuzzerTestOneInput in turn, so that a corpus runs in the test suite
 * with any compiler.  Exit status 0 when every file was read.
 */
#include "config.h"

#include <sys/stat.h>

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

/* One file as one input: 0, or -1 when it cannot be read. */
static int
run_file(const char *path)
{
	uint8_t *buf;
	long n;
	FILE *f;

	if ((f = fopen(path, "rb")) == NULL || fseek(f, 0, SEEK_END) == -1 ||
	    (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) == -1 ||
	    (buf = malloc((size_t)n + 1)) == NULL ||
	    fread(buf, 1, (size_t)n, f) != (size_t)n) {
		perror(path);
		if (f != NULL)
			fclose(f);
		return -1;
	}
	fclose(f);
	LLVMFuzzerTestOneInput(buf, (size_t)n);
	free(buf);
	return 0;
}

/* Names in a directory, sorted, so that a replay is repeatable. */
static int
cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every regular file of dir, in name order. */
static int
run_dir(const char *dir)
{
	char **names = NULL, path[4096];
	size_t n = 0, i;
	struct dirent *de;
	DIR *d;
	int rc = 0;

	if ((d = opendir(dir)) == NULL) {
		perror(dir);
		return -1;
	}
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		if ((names = realloc(names, (n + 1) * sizeof(*names))) == NULL ||
		    (names[n++] = strdup(de->d_name)) == NULL)
			abort();
	}
	closedir(d);
	if (n > 0)
		qsort(names, n, sizeof(*names), cmp);
	for (i = 0; i < n; i++) {
		snprintf(path, sizeof path, "%s/%s", dir, names[i]);
		rc |= run_file(path);
		free(names[i]);
	}
	free(names);
	return rc;
}

/* Each argument, a file or a directory of them, in turn. */
int
main(int argc, char **argv)
{
	struct stat st;
	int rc = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (int i = 1; i < argc; i++) {
		if (stat(argv[i], &st) == -1) {
			perror(argv[i]);
			rc = 1;
		} else if (S_ISDIR(st.st_mode))
			rc |= run_dir(argv[i]) != 0;
		else
			rc |= run_file(argv[i]) != 0;
	}
	return rc;
}
