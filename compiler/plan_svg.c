/*
 * plan_svg.c - `kiln info --plan --svg FILE`: a picture of the buffer plan.
 *
 * One panel per signature, drawn as buffer-assignment viewers draw it: the
 * x axis is the schedule (node steps, left to right), the y axis the arena
 * offset (0 at the top), and each arena buffer a rectangle over its live
 * steps [first, last] and its bytes [off, off + bytes). A dashed line marks
 * the lower bound (the most bytes live at one step): the gap between it and
 * the arena's bottom is what the placement lost. The offset axis is ticked
 * in bytes, the step axis with the names of a few nodes, and the largest
 * buffers are labelled in the picture itself (every one has a hover title).
 * Names come from the model, so they are escaped; the output is
 * deterministic (no clocks, no paths).
 */
#include <inttypes.h>
#include <stdio.h>

#include "plan.h"

enum { SVG_W = 960, LEFT = 90, RIGHT = 20, PANEL_H = 260, TITLE_H = 44, GAP = 44,
       NLABELS = 6 };

/* Text from the model inside an SVG element: markup characters as
 * entities, control and non-ASCII bytes as '?', at most max bytes. */
static void svg_text(FILE *f, const char *s, int max)
{
	for (int n = 0; s && *s && n < max; s++, n++) {
		unsigned char c = (unsigned char)*s;
		if (c == '&')
			fputs("&amp;", f);
		else if (c == '<')
			fputs("&lt;", f);
		else if (c == '>')
			fputs("&gt;", f);
		else if (c == '"')
			fputs("&quot;", f);
		else if (c < 0x20 || c >= 0x7f)
			fputc('?', f);
		else
			fputc(c, f);
	}
}

/* What a buffer holds: its value's name, or what a nameless one is. */
static void buf_name(FILE *f, const Graph *g, const PlanBuf *pb, int max)
{
	if (pb->root != NONE)
		svg_text(f, g->values[pb->root].name, max);
	else if (pb->first == pb->last)
		svg_text(f, "scratch", max);
	else
		svg_text(f, "control-flow region", max);
}

/* Is buffer b among the NLABELS largest (ties by index)? */
static bool largest(const Plan *p, int b)
{
	int above = 0;
	for (int k = 0; k < p->nbufs && above < NLABELS; k++)
		above += p->bufs[k].first >= 0 && (p->bufs[k].bytes > p->bufs[b].bytes ||
		                                   (p->bufs[k].bytes == p->bufs[b].bytes && k < b));
	return above < NLABELS;
}

static void panel(FILE *f, const Graph *g, const Sig *s, const Plan *p, int y0)
{
	int nsteps = g->nnodes > 0 ? g->nnodes : 1;
	double plot_w = SVG_W - LEFT - RIGHT, step_w = plot_w / nsteps;
	int64_t total = p->arena_bytes > 0 ? p->arena_bytes : 1;
	double scale = (double)PANEL_H / (double)total;
	int top = y0 + TITLE_H;
	fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"14\" font-weight=\"bold\">batch %" PRId64
	           ": arena %" PRId64 " bytes in %d buffers, lower bound %" PRId64 " bytes</text>\n",
	        LEFT, y0 + 20, s->batch, p->arena_bytes, p->nbufs, p->lower_bound_bytes);
	fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"#fafafa\" "
	           "stroke=\"#999\"/>\n", LEFT, top, plot_w, PANEL_H);
	/* the offset axis in bytes, a tick every quarter of the arena */
	for (int q = 0; q <= 4; q++) {
		int64_t bytes = p->arena_bytes * q / 4;
		double y = top + (double)bytes * scale;
		fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#999\"/>\n",
		        LEFT - 4, y, LEFT, y);
		fprintf(f, "<text x=\"%d\" y=\"%.1f\" font-size=\"10\" text-anchor=\"end\">%" PRId64
		           " B</text>\n", LEFT - 6, y + (q == 0 ? 9 : q == 4 ? 0 : 4), bytes);
	}
	fprintf(f, "<text x=\"14\" y=\"%d\" font-size=\"11\" transform=\"rotate(-90 14 %d)\" "
	           "text-anchor=\"middle\">arena offset (bytes)</text>\n",
	        top + PANEL_H / 2, top + PANEL_H / 2);
	/* the step axis: a few steps with their node's name */
	int nticks = nsteps < 5 ? nsteps : 5;
	for (int t = 0; t < nticks; t++) {
		int step = nticks > 1 ? (nsteps - 1) * t / (nticks - 1) : 0;
		double x = LEFT + (step + 0.5) * step_w;
		fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#999\"/>\n", x,
		        top + PANEL_H, x, top + PANEL_H + 4);
		fprintf(f, "<text x=\"%.1f\" y=\"%d\" font-size=\"9\" text-anchor=\"%s\">%d ", x,
		        top + PANEL_H + 14, t == 0 ? "start" : t == nticks - 1 ? "end" : "middle", step);
		if (step < g->nnodes)
			svg_text(f, g->nodes[step].name[0] ? g->nodes[step].name : g->nodes[step].op_type, 18);
		fputs("</text>\n", f);
	}
	fprintf(f, "<text x=\"%.1f\" y=\"%d\" font-size=\"11\" text-anchor=\"middle\">node step "
	           "(0 .. %d) and node</text>\n", LEFT + plot_w / 2, top + PANEL_H + 28, nsteps - 1);
	for (int b = 0; b < p->nbufs; b++) {
		const PlanBuf *pb = &p->bufs[b];
		if (pb->bytes <= 0 || pb->first < 0)
			continue;   /* a buffer the optimizer emptied */
		double x = LEFT + pb->first * step_w, w = (pb->last - pb->first + 1) * step_w;
		double y = top + (double)pb->off * scale, h = (double)pb->bytes * scale;
		if (h < 1)
			h = 1;
		fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
		           "fill=\"hsl(%d,60%%,75%%)\" stroke=\"#333\" stroke-width=\"0.5\"><title>",
		        x, y, w, h, (b * 137) % 360);
		buf_name(f, g, pb, 200);
		fprintf(f, ": %" PRId64 " bytes at offset %" PRId64 ", steps %d..%d</title></rect>\n",
		        pb->bytes, pb->off, pb->first, pb->last);
		/* names inside the rectangles that have room; the largest buffers
		 * named even where they have none (with their bytes) */
		if (w > 40 && h > 12) {
			fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\">", x + 3, y + 11);
			buf_name(f, g, pb, (int)(w / 6));
			fputs("</text>\n", f);
		} else if (largest(p, b)) {
			fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"9\">", x + 2,
			        y + (h < 9 ? 8 : h - 1));
			buf_name(f, g, pb, 24);
			fprintf(f, " %" PRId64 " B</text>\n", pb->bytes);
		}
	}
	double lb = top + (double)p->lower_bound_bytes * scale;
	fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#c00\" "
	           "stroke-dasharray=\"6,4\"/>\n", LEFT, lb, LEFT + plot_w, lb);
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" fill=\"#c00\" text-anchor=\"end\">"
	           "lower bound</text>\n", LEFT + plot_w - 4, lb - 3);
}

void plan_svg(const Graph *g, const Sig *sigs, const Plan *plans, int n, FILE *f)
{
	int h = n * (TITLE_H + PANEL_H + GAP) + 10;
	fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
	           "viewBox=\"0 0 %d %d\" font-family=\"DejaVu Sans, Arial, sans-serif\">\n",
	        SVG_W, h, SVG_W, h);
	fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
	for (int i = 0; i < n; i++)
		panel(f, g, &sigs[i], &plans[i], i * (TITLE_H + PANEL_H + GAP));
	fputs("</svg>\n", f);
}
