package io.vgpu.k8s.codec;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.vgpu.k8s.codec.NodeLockCodec.NodeLock;
import java.time.Instant;
import org.junit.jupiter.api.Test;

class NodeLockCodecTest {
  private static final Instant AT = Instant.parse("2026-08-21T06:20:39Z");

  @Test
  void encodesTimeInUtcSecondsThenNamespaceAndPod() {
    assertThat(NodeLockCodec.encode(Instant.parse("2026-08-21T06:20:39.987Z"), "default", "gpu-pod"))
        .isEqualTo("2026-08-21T06:20:39Z,default,gpu-pod");
    assertThat(NodeLockCodec.encodeLegacy(AT)).isEqualTo("2026-08-21T06:20:39Z");
  }

  @Test
  void decodesBothForms() {
    assertThat(NodeLockCodec.decode("2026-08-21T06:20:39Z,default,gpu-pod")).isEqualTo(new NodeLock(AT, "default", "gpu-pod"));
    NodeLock legacy = NodeLockCodec.decode("2026-08-21T06:20:39Z");
    assertThat(legacy).isEqualTo(new NodeLock(AT, "", ""));
    assertThat(legacy.hasOwner()).isFalse();
  }

  @Test
  void decodesOffsetsAsWrittenByASchedulerInLocalTime() {
    assertThat(NodeLockCodec.decode("2026-08-21T14:20:39+08:00,ns,p").time()).isEqualTo(AT);
  }

  @Test
  void rejectsMalformedValues() {
    assertThatThrownBy(() -> NodeLockCodec.decode("2026-08-21T06:20:39Z,default"))
        .hasMessageContaining("expected 3 parts, got 2");
    assertThatThrownBy(() -> NodeLockCodec.decode("yesterday,ns,p")).hasMessageContaining("time 'yesterday' is not RFC 3339");
  }
}
