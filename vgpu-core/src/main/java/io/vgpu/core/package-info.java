/**
 * The allocation engine: a ledger of nodes, devices and grants that answers filter and score, reserve, release and explain.
 */
@NullMarked
package io.vgpu.core;

import org.jspecify.annotations.NullMarked;
