package io.vgpu.k8s.testing;

import io.vgpu.api.spi.ContainerContract;
import io.vgpu.api.spi.ContainerContractProvider;
import io.vgpu.api.spi.ContractSettings;
import java.nio.file.Path;

/** Container contracts as tests need them. */
public final class ContractProviders {
  private ContractProviders() {}

  /**
   * {@code provider} with the node agent's part of the settings, its {@code HOOK_PATH}, set to {@code
   * hook} (a scenario has no such key; simulate uses HAMi's default {@code /usr/local}).
   */
  public static ContainerContractProvider withHookPath(ContainerContractProvider provider, Path hook) {
    return new ContainerContractProvider() {
      @Override
      public String vendor() {
        return provider.vendor();
      }

      @Override
      public ContainerContract create(ContractSettings settings) {
        return provider.create(settings.withHookPath(hook.toString()));
      }
    };
  }
}
