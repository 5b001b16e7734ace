/*
 * f32-attention/body.h - the vector variants' two products, over the type V
 * of W float lanes that the including file defines (with vzero, vset,
 * vload, vstore, vadd, vmul, vfma) and the register tile of its ISA:
 * SC_ROWS query rows by two vectors of scores, PV_ROWS rows by PV_VECS
 * vectors of output. Rows past `rows` repeat the last row and are not
 * stored, so every tile is computed whole. kp is a multiple of 2 W and vp of
 * PV_VECS W (attention.c pads the packed K and V with zeros).
 */

static void SUFFIX(scores)(const float *q, int64_t qrs, int64_t qds, int rows, const float *Kt,
                           int64_t kp, int64_t head_dim, float scale, const float *mask,
                           int64_t mrs, int64_t kv_len, float *S, int64_t lds)
{
	const V sc = vset(scale);
	for (int r0 = 0; r0 < rows; r0 += SC_ROWS) {
		const float *qr[SC_ROWS];
		for (int r = 0; r < SC_ROWS; r++)
			qr[r] = q + (int64_t)(r0 + r < rows ? r0 + r : rows - 1) * qrs;
		for (int64_t j = 0; j < kp; j += 2 * W) {
			V a[SC_ROWS][2];
			for (int r = 0; r < SC_ROWS; r++)
				a[r][0] = a[r][1] = vzero();
			for (int64_t d = 0; d < head_dim; d++) {
				V k0 = vload(Kt + d * kp + j), k1 = vload(Kt + d * kp + j + W);
				for (int r = 0; r < SC_ROWS; r++) {
					V qv = vset(qr[r][d * qds]);
					a[r][0] = vfma(qv, k0, a[r][0]);
					a[r][1] = vfma(qv, k1, a[r][1]);
				}
			}
			for (int r = 0; r < SC_ROWS && r0 + r < rows; r++) {
				vstore(S + (r0 + r) * lds + j, vmul(a[r][0], sc));
				vstore(S + (r0 + r) * lds + j + W, vmul(a[r][1], sc));
			}
		}
	}
	if (!mask)
		return;
	for (int r = 0; r < rows; r++) {
		float *s = S + r * lds;
		const float *m = mask + r * mrs;
		int64_t j = 0;
		for (; j + W <= kv_len; j += W)
			vstore(s + j, vadd(vload(s + j), vload(m + j)));
		for (; j < kv_len; j++)
			s[j] += m[j];
	}
}

static void SUFFIX(pv)(const float *P, int64_t ldp, int rows, const float *Vp, int64_t vp,
                       int64_t kv_len, int64_t v_dim, float *y, int64_t yrs)
{
	for (int r0 = 0; r0 < rows; r0 += PV_ROWS) {
		const float *pr[PV_ROWS];
		for (int r = 0; r < PV_ROWS; r++)
			pr[r] = P + (int64_t)(r0 + r < rows ? r0 + r : rows - 1) * ldp;
		for (int64_t c = 0; c < vp; c += PV_VECS * W) {
			V a[PV_ROWS][PV_VECS];
			for (int r = 0; r < PV_ROWS; r++)
				for (int b = 0; b < PV_VECS; b++)
					a[r][b] = vzero();
			for (int64_t j = 0; j < kv_len; j++) {
				V v[PV_VECS];
				for (int b = 0; b < PV_VECS; b++)
					v[b] = vload(Vp + j * vp + c + b * W);
				for (int r = 0; r < PV_ROWS; r++) {
					V pj = vset(pr[r][j]);
					for (int b = 0; b < PV_VECS; b++)
						a[r][b] = vfma(pj, v[b], a[r][b]);
				}
			}
			for (int r = 0; r < PV_ROWS && r0 + r < rows; r++)
				for (int b = 0; b < PV_VECS; b++) {
					int64_t col = c + b * W;
					float *dst = y + (r0 + r) * yrs + col;
					if (col + W <= v_dim) {
						vstore(dst, a[r][b]);
					} else if (col < v_dim) {
						float tmp[W];
						vstore(tmp, a[r][b]);
						for (int64_t e = 0; e < v_dim - col; e++)
							dst[e] = tmp[e];
					}
				}
		}
	}
}

const AttnOps ATTN_OPS = {SUFFIX(scores), SUFFIX(pv)};
