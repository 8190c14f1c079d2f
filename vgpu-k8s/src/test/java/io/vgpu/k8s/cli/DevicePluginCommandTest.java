package io.vgpu.k8s.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.vgpu.k8s.deviceplugin.NodeAgent;
import io.vgpu.k8s.yaml.InputException;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/** {@code vgpu device-plugin}'s flags for the KAI stack. */
class DevicePluginCommandTest {
  @Test
  void stackDefaultsToHamiAndTakesKai() {
    DevicePluginCommand defaults = new DevicePluginCommand();
    new CommandLine(defaults).parseArgs();
    assertThat(DevicePluginCommand.stack(defaults.stack)).isEqualTo(NodeAgent.Stack.HAMI);
    assertThat(defaults.podResourcesSocket).isEqualTo(Path.of("/var/lib/kubelet/pod-resources/kubelet.sock"));

    DevicePluginCommand kai = new DevicePluginCommand();
    new CommandLine(kai).parseArgs("--stack", "kai", "--pod-resources-socket", "/run/pr.sock");
    assertThat(DevicePluginCommand.stack(kai.stack)).isEqualTo(NodeAgent.Stack.KAI);
    assertThat(kai.podResourcesSocket).isEqualTo(Path.of("/run/pr.sock"));
  }

  @Test
  void anUnknownStackIsOneLine() {
    assertThatThrownBy(() -> DevicePluginCommand.stack("volcano")).isInstanceOf(InputException.class).hasMessage("--stack 'volcano' is not one of hami, kai");
  }
}
