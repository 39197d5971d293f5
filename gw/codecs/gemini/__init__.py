"""The Google AI Studio (Gemini) generateContent wire format, upstream side, sans I/O."""
