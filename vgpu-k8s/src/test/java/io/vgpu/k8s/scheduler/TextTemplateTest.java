package io.vgpu.k8s.scheduler;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Map;
import org.junit.jupiter.api.Test;

class TextTemplateTest {
  @Test
  void fillsEveryPlaceholderWhereItStands() {
    TextTemplate t = TextTemplate.of("{\"name\":\"@NAME@\",\"rv\":\"@RV0@\",\"again\":\"@NAME@\"}");

    assertThat(t.fill(Map.of("NAME", "p-1", "RV0", "7"))).isEqualTo("{\"name\":\"p-1\",\"rv\":\"7\",\"again\":\"p-1\"}");
    assertThat(t.fill(Map.of("NAME", "", "RV0", "@X@"))).as("values are not read as placeholders").isEqualTo("{\"name\":\"\",\"rv\":\"@X@\",\"again\":\"\"}");
  }

  @Test
  void aTextWithoutPlaceholdersIsItself() {
    assertThat(TextTemplate.of("plain @ text @").fill(Map.of())).isEqualTo("plain @ text @");
  }

  @Test
  void aPlaceholderWithoutAValueIsAnErrorNamingIt() {
    assertThatThrownBy(() -> TextTemplate.of("a @B@ c").fill(Map.of())).isInstanceOf(IllegalArgumentException.class).hasMessage("no value for the placeholder @B@");
  }
}
