/**
 * HAMi's device configuration (the {@code nvidia} section of {@code device-config.yaml}) as one record,
 * read from a scenario's {@code config} or from HAMi's file.
 */
@NullMarked
package io.vgpu.k8s.config;

import org.jspecify.annotations.NullMarked;
