/**
 * Compressed data written by the reference command-line tools (Debian's `lz4` 1.9 and `zstd` 1.5), kept
 * here so the decompression specs check our readers against an independent writer without needing the
 * tools. The input is `cliVectorPlainText()`; the vectors were made with
 *
 *   lz4 -B4 -BD --content-size -BX plain.txt linked.lz4   # 64 KiB linked blocks, block and content checksums, content size
 *   lz4 plain.txt default.lz4                              # 4 MiB independent blocks, content checksum
 *   zstd -19 plain.txt -o a.zst                            # one frame with its content size and checksum
 *   cat plain.txt | zstd -3 --no-check -c > stream.zst     # streamed: no content size (a window descriptor), no checksum
 *   cat a.zst stream.zst > two.zst                         # two frames back to back
 *
 * (a fixture, not part of the package's build).
 */

/** 6000 lines `row i%50 value (7i)%50`, 93 600 bytes: repetitive enough that the 64 KiB blocks refer back across blocks. */
export function cliVectorPlainText(): Buffer {
  let text = '';
  for (let index = 0; index < 6000; index++) text += `row ${index % 50} value ${(index * 7) % 50}\n`;
  return Buffer.from(text, 'utf8');
}

export const LZ4_LINKED_BLOCKS = Buffer.from('BCJNGFxAoG0BAAAAAAAwqwIAAOByb3cgMCB2YWx1ZSAwCg4AEzEOABE3DgATMg4AITE0DwATMw8AITIxDwAUNA8AETgPABM1DwAhMzUPABM2DwAhNDIPABQ3DwAROQ8AEzgPABE2DgATOQ4AITEzDwAUMZQAEzKVAASWABIylwAUMZgAEjOYABQxmQASNJkAFDGaABI0mgAUMZsAApoAFDGbABIxmwAUMZwAEjGcABQxnQASMp4AFDGfABIznwAUMp8AEjSfABQynwASNJ8AFDKfAAKeABQyngASMZ4AFDKeABIxngAUMp4AEjKfABQynwASM58AFDKfABIznwAUMp8AEjSfABUynwABPQEUM54AEjGeABQzngASMZ4AFDOeABIynwAUM58AEjOfABQznwASM58AFDOfABI0nwAUM58AAp4AFDOeAAKdABQznQASMZ0AFDOdABIyPAEUNJ4AEjOeABQ0ngASM54AFDSeABI0ngAUNJ4AAp0AFDSdAAKcABQ0nAASMZwAFTScAAKdABQ0nQASMp4AFDSeABIzngAUNJ4AEjSeAASdAAKcAASbAAKaAASZAA8MA/////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////+xUCAwCnJvwU6ab3cAAAAP5Pz/////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////9VBlIDQzChw8+tYAAAAABwRVQw==', 'base64');

export const LZ4_DEFAULT = Buffer.from('BCJNGGRQCBkDAADgcm93IDAgdmFsdWUgMAoOABMxDgARNw4AEzIOACExNA8AEzMPACEyMQ8AFDQPABE4DwATNQ8AITM1DwATNg8AITQyDwAUNw8AETkPABM4DwARNg4AEzkOACExMw8AFDGUABMylQAElgASMpcAFDGYABIzmAAUMZkAEjSZABQxmgASNJoAFDGbAAKaABQxmwASMZsAFDGcABIxnAAUMZ0AEjKeABQxnwASM58AFDKfABI0nwAUMp8AEjSfABQynwACngAUMp4AEjGeABQyngASMZ4AFDKeABIynwAUMp8AEjOfABQynwASM58AFDKfABI0nwAVMp8AAT0BFDOeABIxngAUM54AEjGeABQzngASMp8AFDOfABIznwAUM58AEjOfABQznwASNJ8AFDOfAAKeABQzngACnQAUM50AEjGdABQznQASMjwBFDSeABIzngAUNJ4AEjOeABQ0ngASNJ4AFDSeAAKdABQ0nQACnAAUNJwAEjGcABU0nAACnQAUNJ0AEjKeABQ0ngASM54AFDSeABI0ngAEnQACnAAEmwACmgAEmQAPDAP///////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////+/UGUgNDMKAAAAAAcEVUM=', 'base64');

export const ZSTD_TWO_FRAMES = Buffer.from('KLUv/aSgbQEAhQUAQswaEcCnA0uEb/9/pZRSppT6UXFuBuDfyfZrvaUP5/bT//syX1zunonmK5c8H5tv2n7rIl1Y7Cvdeq7W1OnU+JLu2zpbXmofqcZjsSTO0H7y5l1W2YDmkd2rp/FYz/psMUgKAyjBcBACEpQgKYxiqBHQ9GG/A6BbljESyBfg7////2+Qag8zs4i+zHwH/eXqvmFi2+w5ene7d8+X8x82O0beRYHSqAFO6ZPMa8d9VwGjYICKKLUv/QBYTQUAAscQE6C30AHIao9QVXJERIhMYvHeWq3b0zS37T3tv/+1u6a1JKU0TStVnXMlFykOxNAKYuKYespwlkQBDCMgDAKFGWZJlGSocezuvwFgoyTbEqgRW3b3////DoVqD8P72W2HPhL3znao+0IyYwf42bIdTiZIUQNQjGhiIgJkIGRFCB1Q8ZF49PGozoaD2IDmmmlgeLl5RDeRzJGOwB/sZCt0AD7kHu1RBQ==', 'base64');
