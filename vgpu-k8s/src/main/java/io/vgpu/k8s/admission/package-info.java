/**
 * The admission webhook's decision as a pure function: HAMi's defaults and rejections applied to a Pod,
 * with the resulting JSON Patch.
 */
@NullMarked
package io.vgpu.k8s.admission;

import org.jspecify.annotations.NullMarked;
