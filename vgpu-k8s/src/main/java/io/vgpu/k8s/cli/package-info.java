/**
 * The {@code vgpu} command line and the plug-in point through which other modules add subcommands.
 */
@NullMarked
package io.vgpu.k8s.cli;

import org.jspecify.annotations.NullMarked;
