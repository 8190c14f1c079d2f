package io.vgpu.api.spi;

/**
 * Makes the {@link ContainerContract} of one vendor; registered in {@code
 * META-INF/services/io.vgpu.api.spi.ContainerContractProvider}. Users of the SPI pick the provider
 * whose {@link #vendor()} equals the vendor word of their resource schema (e.g. {@code NVIDIA}) and
 * create one contract per configuration: a contract is immutable, so a configuration change makes a
 * new one.
 */
public interface ContainerContractProvider {

  /** The vendor's common word, as in {@link io.vgpu.api.ResourceSchema#vendor()}, e.g. {@code NVIDIA}. */
  String vendor();

  /**
   * Creates a contract for one node configuration.
   *
   * @throws IllegalArgumentException when the settings cannot serve this vendor; the message names
   *     the setting and value
   */
  ContainerContract create(ContractSettings settings);
}
