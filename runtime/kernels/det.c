/*
 * det.c - the determinant of a square matrix in double precision, by LU
 * factorization with partial pivoting (ONNX Det).
 *
 * The caller converts its elements (any float type) into the double matrix
 * and converts the result back, so one kernel serves every element type and
 * the factorization never loses precision to float32.
 */
#include <math.h>

#include "kiln/kernels.h"

KILN_API double kiln_f64_det(double *A, int64_t n)
{
	double det = 1;
	for (int64_t k = 0; k < n; k++) {
		/* Pivot: the largest magnitude in column k at or below the diagonal. */
		int64_t p = k;
		for (int64_t i = k + 1; i < n; i++)
			if (fabs(A[i * n + k]) > fabs(A[p * n + k]))
				p = i;
		if (p != k) {
			for (int64_t j = 0; j < n; j++) {
				double t = A[k * n + j];
				A[k * n + j] = A[p * n + j];
				A[p * n + j] = t;
			}
			det = -det;
		}
		double pivot = A[k * n + k];
		det *= pivot;
		if (pivot == 0)
			return det;  /* singular: 0 with the sign IEEE gives (NaN stays NaN) */
		for (int64_t i = k + 1; i < n; i++) {
			double f = A[i * n + k] / pivot;
			for (int64_t j = k + 1; j < n; j++)
				A[i * n + j] -= f * A[k * n + j];
		}
	}
	return det;
}
