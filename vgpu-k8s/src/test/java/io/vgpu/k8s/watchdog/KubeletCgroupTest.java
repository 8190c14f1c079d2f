package io.vgpu.k8s.watchdog;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Optional;
import org.junit.jupiter.api.Test;

/** Kubelet's cgroup names under both drivers, cgroup v1 and v2, behind prefixes, and what is not one. */
class KubeletCgroupTest {
  private static final String UID = "8d6f2b1e-3c4a-4b5d-9e8f-0a1b2c3d4e5f";
  private static final String UID_ = UID.replace('-', '_');
  private static final String ID = "4f1b9c0e2a7d3e6f8a9b0c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f";
  private static final Optional<KubeletCgroup> OWNER = Optional.of(new KubeletCgroup(UID, ID));

  @Test
  void cgroupfsOnCgroupV1() {
    String file =
        """
        12:pids:/kubepods/burstable/pod%1$s/%2$s
        11:memory:/kubepods/burstable/pod%1$s/%2$s
        5:cpu,cpuacct:/kubepods/burstable/pod%1$s/%2$s
        1:name=systemd:/kubepods/burstable/pod%1$s/%2$s
        """.formatted(UID, ID);
    assertThat(KubeletCgroup.ofProcFile(file)).isEqualTo(OWNER);
  }

  @Test
  void cgroupfsQosClassesAndGuaranteedPods() {
    assertThat(KubeletCgroup.ofPath("/kubepods/besteffort/pod" + UID + "/" + ID)).isEqualTo(OWNER);
    assertThat(KubeletCgroup.ofPath("/kubepods/pod" + UID + "/" + ID)).isEqualTo(OWNER);
  }

  @Test
  void cgroupfsOnCgroupV2() {
    assertThat(KubeletCgroup.ofProcFile("0::/kubepods/besteffort/pod" + UID + "/" + ID + "\n")).isEqualTo(OWNER);
  }

  @Test
  void systemdOnCgroupV2ForEachRuntime() {
    for (String scope : new String[] {"cri-containerd-" + ID + ".scope", "docker-" + ID + ".scope", "crio-" + ID + ".scope"}) {
      String file = "0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + UID_ + ".slice/" + scope + "\n";
      assertThat(KubeletCgroup.ofProcFile(file)).as(scope).isEqualTo(OWNER);
    }
    assertThat(KubeletCgroup.ofPath("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + UID_ + ".slice/cri-containerd-" + ID + ".scope"))
        .isEqualTo(OWNER);
    assertThat(KubeletCgroup.ofPath("/kubepods.slice/kubepods-pod" + UID_ + ".slice/cri-containerd-" + ID + ".scope")).isEqualTo(OWNER);
  }

  @Test
  void systemdOnCgroupV1() {
    String path = "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + UID_ + ".slice/docker-" + ID + ".scope";
    String file = "11:pids:" + path + "\n10:memory:" + path + "\n1:name=systemd:" + path + "\n0::/\n";
    assertThat(KubeletCgroup.ofProcFile(file)).isEqualTo(OWNER);
  }

  @Test
  void anyPrefix() {
    // a lab's own directory, a cgroup namespace's view from a sibling, kind's nested kubelet
    assertThat(KubeletCgroup.ofPath("/vgpu-lab-1234/kubepods/besteffort/pod" + UID + "/" + ID)).isEqualTo(OWNER);
    assertThat(KubeletCgroup.ofPath("/../../kubepods-besteffort-pod" + UID_ + ".slice/cri-containerd-" + ID + ".scope")).isEqualTo(OWNER);
    assertThat(KubeletCgroup.ofPath(
            "/system.slice/docker-abc.scope/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice/kubelet-kubepods-besteffort-pod"
                + UID_ + ".slice/cri-containerd-" + ID + ".scope"))
        .isEqualTo(OWNER);
  }

  @Test
  void theInnermostPodWinsInANestedCluster() {
    String outer = "1a2b3c4d-0000-4000-8000-000000000000";
    assertThat(KubeletCgroup.ofPath("/kubepods/burstable/pod" + outer + "/aaaa/kubelet/kubepods/besteffort/pod" + UID + "/" + ID)).isEqualTo(OWNER);
  }

  @Test
  void aProcessInASubCgroupOfItsContainerStillBelongsToIt() {
    assertThat(KubeletCgroup.ofPath("/kubepods/besteffort/pod" + UID + "/" + ID + "/worker")).isEqualTo(OWNER);
  }

  @Test
  void crioUnderCgroupfsAndItsConmon() {
    assertThat(KubeletCgroup.ofPath("/kubepods/burstable/pod" + UID + "/crio-" + ID)).isEqualTo(OWNER);
    assertThat(KubeletCgroup.ofPath("/kubepods.slice/kubepods-pod" + UID_ + ".slice/crio-conmon-" + ID + ".scope"))
        .contains(new KubeletCgroup(UID, ""));
  }

  @Test
  void thePodsOwnCgroupNamesNoContainer() {
    Optional<KubeletCgroup> owner = KubeletCgroup.ofPath("/kubepods/besteffort/pod" + UID);
    assertThat(owner).contains(new KubeletCgroup(UID, ""));
    assertThat(owner.get().hasContainer()).isFalse();
    assertThat(KubeletCgroup.ofPath("/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + UID_ + ".slice/init.scope"))
        .contains(new KubeletCgroup(UID, ""));
  }

  @Test
  void aHierarchyLeftAtPodLevelAgreesWithTheContainersOwn() {
    String file = "12:pids:/kubepods/besteffort/pod" + UID + "/" + ID + "\n4:memory:/kubepods/besteffort/pod" + UID + "\n";
    assertThat(KubeletCgroup.ofProcFile(file)).isEqualTo(OWNER);
  }

  @Test
  void hierarchiesThatNameDifferentOwnersAreNoAnswer() {
    String other = "0f0e0d0c-0000-4000-8000-000000000000";
    String twoPods = "12:pids:/kubepods/besteffort/pod" + UID + "/" + ID + "\n4:memory:/kubepods/besteffort/pod" + other + "/" + ID + "\n";
    String twoContainers = "12:pids:/kubepods/besteffort/pod" + UID + "/" + ID + "\n4:memory:/kubepods/besteffort/pod" + UID + "/beef\n";
    assertThat(KubeletCgroup.ofProcFile(twoPods)).isEmpty();
    assertThat(KubeletCgroup.ofProcFile(twoContainers)).isEmpty();
  }

  @Test
  void hostProcessesAndGarbageNameNoPod() {
    assertThat(KubeletCgroup.ofProcFile("")).isEmpty();
    assertThat(KubeletCgroup.ofProcFile("0::/\n")).isEmpty();
    assertThat(KubeletCgroup.ofProcFile("0::/system.slice/containerd.service\n1:name=systemd:/user.slice/user-0.slice/session-3.scope\n")).isEmpty();
    assertThat(KubeletCgroup.ofProcFile("no colons here at all\n/kubepods/besteffort/pod" + UID + "/" + ID)).isEmpty();
    assertThat(KubeletCgroup.ofProcFile("\u0000\u00ff:\n::::\n")).isEmpty();
    // "pod<uid>" only counts under kubepods or a QoS class directory, and only with a hexadecimal UID
    assertThat(KubeletCgroup.ofPath("/home/pod" + UID + "/" + ID)).isEmpty();
    assertThat(KubeletCgroup.ofPath("/kubepods/besteffort/podNOT-A-UID/" + ID)).isEmpty();
    assertThat(KubeletCgroup.ofPath("/kubepods.slice/kubepods-besteffort-podxyz.slice/docker-" + ID + ".scope")).isEmpty();
    assertThat(KubeletCgroup.ofPath("/kubepods/besteffort/pod")).isEmpty();
  }

  @Test
  void aContainerDirectoryThatIsNoContainerIdNamesNone() {
    assertThat(KubeletCgroup.ofPath("/kubepods/besteffort/pod" + UID + "/.hidden")).contains(new KubeletCgroup(UID, ""));
    assertThat(KubeletCgroup.ofPath("/kubepods/besteffort/pod" + UID + "/..")).contains(new KubeletCgroup(UID, ""));
    assertThat(KubeletCgroup.ofPath("/kubepods.slice/kubepods-pod" + UID_ + ".slice/" + ID + ".scope")).contains(new KubeletCgroup(UID, ""));
  }
}
