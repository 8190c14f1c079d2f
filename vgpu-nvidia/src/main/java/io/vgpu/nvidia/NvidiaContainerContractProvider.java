package io.vgpu.nvidia;

import io.vgpu.api.spi.ContainerContract;
import io.vgpu.api.spi.ContainerContractProvider;
import io.vgpu.api.spi.ContractSettings;

/** Provides the {@link NvidiaContainerContract} for the vendor word {@code NVIDIA}. */
public final class NvidiaContainerContractProvider implements ContainerContractProvider {
  /** The vendor word of HAMi's NVIDIA resource schema. */
  public static final String VENDOR = "NVIDIA";

  @Override
  public String vendor() {
    return VENDOR;
  }

  @Override
  public ContainerContract create(ContractSettings settings) {
    return new NvidiaContainerContract(settings);
  }
}
