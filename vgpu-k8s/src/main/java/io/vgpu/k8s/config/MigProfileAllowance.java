package io.vgpu.k8s.config;

import java.util.List;

/**
 * One entry of HAMi's {@code migProfileAllowlist}: the MIG profiles the scheduler may create on GPUs
 * whose model matches one of {@code models}.
 *
 * @param models model names, e.g. {@code A100-SXM4-40GB}
 * @param profiles profile names of the form {@code <n>g.<memory>}, e.g. {@code 1g.5gb}
 */
public record MigProfileAllowance(List<String> models, List<String> profiles) {

  /** Copies the lists. */
  public MigProfileAllowance {
    models = List.copyOf(models);
    profiles = List.copyOf(profiles);
  }
}
