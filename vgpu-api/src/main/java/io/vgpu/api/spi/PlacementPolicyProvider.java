package io.vgpu.api.spi;

/**
 * Makes a {@link PlacementPolicy} available by name; registered in {@code
 * META-INF/services/io.vgpu.api.spi.PlacementPolicyProvider}. The engine's built-in policies are
 * registered the same way, so a third-party policy is selected exactly like {@code binpack}.
 */
public interface PlacementPolicyProvider {

  /** The name pods and configuration select the policy by. */
  String name();

  /** Creates a policy instance; one instance serves one engine. */
  PlacementPolicy create();
}
