package io.vgpu.examples.lab.kubelet;

/**
 * A pod volume kubelet cannot set up (a hostPath whose type check fails, a missing ConfigMap): the pod's
 * containers wait in {@code ContainerCreating}, and kubelet reports {@code FailedMount} with this
 * message and tries again.
 */
public final class VolumeSetupException extends Exception {
  private static final long serialVersionUID = 1L;

  /** An error with kubelet's message, {@code MountVolume.SetUp failed for volume "NAME" : WHY}. */
  public VolumeSetupException(String volume, String why) {
    super("MountVolume.SetUp failed for volume \"" + volume + "\" : " + why);
  }
}
