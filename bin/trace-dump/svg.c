/* SPDX-License-Identifier: ISC */
/*
 * svg.c: --format svg, the restore timeline as a standalone SVG picture.
 *
 * One row per restore: a title line, then two tracks on one time scale
 * from the restore's start: the daemon's bridge span and the child's
 * session_restore span, the child's stages laid end to end inside it.  A
 * dashed line marks the budget (the deadline), a solid one the public
 * result; a deadline more than four times the restore's length is noted
 * at the right edge instead of squashing the bars.  Every shape has a
 * <title> (a tooltip in browsers, a name for screen readers); a legend
 * under the rows names the tracks, the lines and each stage's colour (one
 * colour per stage name across the picture).  The root element needs the height, so rows are built
 * in memory first: at most SVG_MAX_ROWS are drawn, the rest counted.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace-dump.h"
#include "xmalloc.h"

#define SVG_MAX_ROWS	1000
#define SVG_WIDTH	960
#define SVG_LABEL	90	/* the track names' column */
#define SVG_PLOT	(SVG_WIDTH - SVG_LABEL - 20)
#define SVG_ROW		100
#define SVG_TOP		40

#define SVG_LEGEND_MAX	TD_MAX_STAGES	/* stage names in the legend */
#define SVG_LEGEND_COLS	4		/* legend entries a line */
#define SVG_LEGEND_LINE	16

struct svg {
	FILE	*out;
	FILE	*rows;		/* memstream */
	char	*buf;
	size_t	 len;
	size_t	 nrows;
	size_t	 skipped;
	/* The legend: each stage name once, in the order first drawn. */
	char	 names[SVG_LEGEND_MAX][sizeof(((struct stage *)0)->name)];
	size_t	 nnames;
};

/* The stage colours (distinct, readable on white). */
static const char *const palette[] = {
	"#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2", "#edc948",
	"#ff9da7", "#9c755f", "#bab0ac", "#e15759",
};

/* Write s escaped for XML text and attribute values. */
static void
xml(FILE *f, const char *s)
{
	for (; s != NULL && *s != '\0'; s++) {
		switch (*s) {
		case '&': fputs("&amp;", f); break;
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&apos;", f); break;
		default:
			/* XML 1.0 has no place for other control characters. */
			fputc((unsigned char)*s < 0x20 && *s != '\t' ? ' ' : *s, f);
		}
	}
}

struct svg *
svg_new(FILE *out)
{
	struct svg	*s;

	s = xcalloc(1, sizeof(*s));
	s->out = out;
	if ((s->rows = open_memstream(&s->buf, &s->len)) == NULL) {
		free(s);
		return NULL;
	}
	return s;
}

/* A span's start and end in ms from the restore's start (0 when absent). */
static void
span_ms(const struct restore *r, const struct tspan *sp, double *a, double *b)
{
	*a = *b = 0;
	if (sp == NULL)
		return;
	*a = sp->start_ns > r->start_ns ? (double)(sp->start_ns - r->start_ns) /
	    1e6 : 0;
	*b = sp->end_ns > r->start_ns ? (double)(sp->end_ns - r->start_ns) /
	    1e6 : *a;
}

/* One bar with its tooltip. */
static void
bar(FILE *f, double x, double y, double w, double h, const char *fill,
    const char *tip, double ms)
{
	fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
	    "fill=\"%s\"><title>", x, y, w < 1 ? 1 : w, h, fill);
	xml(f, tip);
	fprintf(f, ": %.3f ms</title></rect>\n", ms);
}

/*
 * The colour of a stage: one per name across every row, so the legend
 * holds for the whole picture.
 */
static const char *
stage_colour(struct svg *s, const char *name)
{
	size_t	i;

	for (i = 0; i < s->nnames && strcmp(s->names[i], name) != 0; i++)
		;
	if (i == s->nnames && s->nnames < SVG_LEGEND_MAX)
		strlcpy(s->names[s->nnames++], name, sizeof(s->names[0]));
	return palette[i % (sizeof(palette) / sizeof(palette[0]))];
}

/* The child's stages, end to end from its start. */
static void
stages(struct svg *s, const struct restore *r, double c0, double scale,
    double y)
{
	double	x = c0;
	size_t	i;

	for (i = 0; i < r->nstages; i++) {
		bar(s->rows, SVG_LABEL + x * scale, y, r->stages[i].ms * scale,
		    16, stage_colour(s, r->stages[i].name), r->stages[i].name,
		    r->stages[i].ms);
		x += r->stages[i].ms;
	}
}

/* Height of the legend: the tracks and marks line, then the stages. */
static size_t
legend_height(const struct svg *s)
{
	return SVG_LEGEND_LINE * (2 + (s->nnames + SVG_LEGEND_COLS - 1) /
	    SVG_LEGEND_COLS) + 8;
}

/* One legend swatch (a rect, or a line for style) and its name. */
static void
legend_entry(FILE *f, double x, double y, const char *fill,
    const char *style, const char *name)
{
	if (style == NULL)
		fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"12\" "
		    "height=\"10\" fill=\"%s\"/>", x, y - 9, fill);
	else
		fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
		    "y2=\"%.1f\" stroke=\"#222\" %s/>", x + 6, y - 11, x + 6,
		    y + 2, style);
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\">", x + 16,
	    y);
	xml(f, name);
	fputs("</text>\n", f);
}

/* The legend under the rows: what each colour and line means. */
static void
legend(const struct svg *s, size_t top)
{
	FILE	*f = s->out;
	double	 y = (double)top + SVG_LEGEND_LINE, w = SVG_WIDTH / SVG_LEGEND_COLS;
	size_t	 i;

	fprintf(f, "<g class=\"legend\"><text x=\"4\" y=\"%.1f\" "
	    "font-size=\"11\" font-weight=\"bold\">Legend</text>\n", y);
	legend_entry(f, 70, y, "#9aa5b1", NULL, "daemon bridge span");
	legend_entry(f, 230, y, "#d5dbe1", NULL, "child restore span");
	legend_entry(f, 390, y, NULL, "stroke-dasharray=\"4 3\"",
	    "deadline (budget)");
	legend_entry(f, 530, y, NULL, "", "public result");
	for (i = 0; i < s->nnames; i++)
		legend_entry(f, 4 + w * (double)(i % SVG_LEGEND_COLS),
		    y + SVG_LEGEND_LINE * (double)(1 + i / SVG_LEGEND_COLS),
		    palette[i % (sizeof(palette) / sizeof(palette[0]))], NULL,
		    s->names[i]);
	fputs("</g>\n", f);
}

/* A vertical marker with its label on line n (0, 1) under the tracks. */
static void
mark(FILE *f, double x, double y, int n, const char *label,
    const char *style)
{
	int	right = x > SVG_WIDTH - 160;

	fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
	    "stroke=\"#222\" %s/><text x=\"%.1f\" y=\"%.1f\" font-size=\"10\"%s>",
	    x, y + 14, x, y + 62 + 12 * n, style, right ? x - 3 : x + 3,
	    y + 72 + 12 * n, right ? " text-anchor=\"end\"" : "");
	xml(f, label);
	fputs("</text>\n", f);
}

void
svg_restore(struct svg *s, const struct restore *r)
{
	FILE	*f = s->rows;
	double	 d0, d1, c0, c1, end, scale, y = SVG_TOP + s->nrows * SVG_ROW;
	char	 label[64];

	if (s->nrows >= SVG_MAX_ROWS) {
		s->skipped++;
		return;
	}
	span_ms(r, r->daemon, &d0, &d1);
	span_ms(r, r->child, &c0, &c1);
	end = r->elapsed_ms;
	/* A far deadline would squash the bars: then it is noted, not drawn. */
	if (r->budget_ms > end && r->budget_ms <= 4 * end)
		end = r->budget_ms;
	if (d1 > end)
		end = d1;
	if (c1 > end)
		end = c1;
	scale = SVG_PLOT / (end > 0 ? end : 1);
	fprintf(f, "<g class=\"restore\"><text x=\"4\" y=\"%.1f\" "
	    "font-size=\"12\" font-weight=\"bold\">", y + 10);
	xml(f, r->action);
	fputs(" ", f);
	xml(f, r->session_id != NULL ? r->session_id : "(no session id)");
	fputs(": ", f);
	xml(f, r->result != NULL ? r->result : "?");
	fprintf(f, " after %.1f ms", r->elapsed_ms);
	if (r->budget_ms >= 0)
		fprintf(f, " of a %.0f ms budget", r->budget_ms);
	if (r->failed_stage != NULL) {
		fputs(", failed in ", f);
		xml(f, r->failed_stage);
	}
	fputs("</text>\n", f);
	fprintf(f, "<text x=\"4\" y=\"%.1f\" font-size=\"11\">daemon</text>\n"
	    "<text x=\"4\" y=\"%.1f\" font-size=\"11\">child</text>\n",
	    y + 30, y + 52);
	if (r->daemon != NULL)
		bar(f, SVG_LABEL + d0 * scale, y + 18, (d1 - d0) * scale, 16,
		    "#9aa5b1", TD_DAEMON_SPAN, d1 - d0);
	if (r->child != NULL) {
		bar(f, SVG_LABEL + c0 * scale, y + 40, (c1 - c0) * scale, 16,
		    "#d5dbe1", TD_CHILD_SPAN, c1 - c0);
		stages(s, r, c0, scale, y + 40);
	} else
		fprintf(f, "<text x=\"%d\" y=\"%.1f\" font-size=\"11\">no "
		    "child span</text>\n", SVG_LABEL, y + 52);
	if (r->budget_ms >= 0 && r->budget_ms <= end) {
		snprintf(label, sizeof(label), "deadline %.0f ms", r->budget_ms);
		mark(f, SVG_LABEL + r->budget_ms * scale, y, 1, label,
		    "stroke-dasharray=\"4 3\"");
	} else if (r->budget_ms >= 0)
		fprintf(f, "<text x=\"%d\" y=\"%.1f\" font-size=\"10\" "
		    "text-anchor=\"end\">deadline %.0f ms (off this scale) "
		    "\xe2\x86\x92</text>\n", SVG_WIDTH - 4, y + 84, r->budget_ms);
	snprintf(label, sizeof(label), "%s", r->public_result != NULL ?
	    r->public_result : "result");
	mark(f, SVG_LABEL + r->elapsed_ms * scale, y, 0, label, "");
	fputs("</g>\n", f);
	s->nrows++;
}

void
svg_finish(struct svg *s)
{
	size_t	h;

	if (s == NULL)
		return;
	fclose(s->rows);
	h = SVG_TOP + s->nrows * SVG_ROW + (s->skipped > 0 ? 30 : 10) +
	    legend_height(s);
	fprintf(s->out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	    "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
	    "height=\"%zu\" viewBox=\"0 0 %d %zu\" font-family=\"sans-serif\" "
	    "role=\"img\" aria-labelledby=\"title\">\n"
	    "<title id=\"title\">qwen-trace-dump: %zu restore%s</title>\n"
	    "<rect width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>\n"
	    "<text x=\"4\" y=\"20\" font-size=\"14\">Restores: daemon and "
	    "child tracks, stages, deadline (dashed) and public result"
	    "</text>\n", SVG_WIDTH, h, SVG_WIDTH, h, s->nrows,
	    s->nrows == 1 ? "" : "s");
	if (s->len > 0)
		fwrite(s->buf, 1, s->len, s->out);
	if (s->skipped > 0)
		fprintf(s->out, "<text x=\"4\" y=\"%zu\" font-size=\"12\">%zu "
		    "more restores not drawn</text>\n", h - 12 - legend_height(s),
		    s->skipped);
	legend(s, h - legend_height(s));
	fputs("</svg>\n", s->out);
	free(s->buf);
	free(s);
}
